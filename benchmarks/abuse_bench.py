"""What a client sends cannot buy it more than the rules give (wrong tokens, a Subscriber's
backoff, IDN origins, pings that pile up, window acks, frame length; spec §5.7 rules 4, 5, 9,
11, §5.10): each row re-run against a real ``posewire serve`` process on loopback.

Run: ``.venv/bin/python benchmarks/abuse_bench.py [--only tokens,pings,forged,length,origin,backoff,broker]
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
  each welcome: connects in 4 s;
* ``slowlink`` — a flood of hello-less connections from 1,200 loopback addresses
  (127.0.1.1–127.0.5.200; ``--flood-rate``, default 1,600/s, opened by a separate process)
  against a relay at its default cap of 1,024: 6 tries of a client that needs 1 s from
  accept to upgrade (its upgrade request in 10 pieces over 1 s, spec §5.7 rule 8) and 18
  of a fast client, each to its welcome; the flood rate achieved, the relay's CPU and
  counters;
* ``proxy`` — 1,000 connections from 8 untrusted loopback addresses that stay silent, or
  send one byte ``P`` (the start of a PROXY header) and nothing more, to a relay with and
  without ``--proxy-protocol`` (spec §5.7 rule 12; hello deadline 60 s so that they stay):
  the relay's CPU (s/s over 5 s), its open descriptors (the relay started with a soft
  limit of 1,024, as many systems give, which it raises to its cap + 64), the
  connections it holds, its failed accepts and how long a legitimate client takes to its
  welcome meanwhile.

* ``broker`` — three relays on the broker configuration of ``docs/nats-posewire.conf``
  (a real ``nats-server``), a 60 Hz producer on relay1, consumers on relay2 and relay3,
  and an attacker logged in with relay3's credential (spec §5.7.1): (a) one forged frame
  at seq + 500, with and without ``Posewire-Producer``, on its own subject and on
  relay1's; (b) relay1's claim and heartbeat deleted and the stream squatted (its own
  claim, renewed, frames on its subject); (c) ``Nats-Rollup: all`` and purges of the
  late-join state bucket. Per attack: the consumers' longest gap in real frames, forged
  frames they got, whether the producer lost the stream; for (c) what the broker
  answered and how long a late joiner on a cold relay waits for the calibration.

``--before ROOT``: the ``slowlink`` and ``proxy`` rows also against the relay of another
checkout (its ``ROOT/.venv/bin/python``), e.g. ``/work/main``, for a before/after table.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import itertools
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
import hello_flood_bench  # noqa: E402  (a process's CPU seconds)
import relay_bench  # noqa: E402  (free port, waiting for the relay, stopping it, its counters)

if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))
from brokerutil import holding  # noqa: E402  (acting on the broker as a relay does)
from netutil import open_raw, raw_upgrade  # noqa: E402  (a raw WebSocket client, slow or fast)

MiB = 1 << 20


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _stock_limit() -> None:
    """In the relay's process before it starts: the soft descriptor limit many systems
    give a process (1,024), the hard one left as it is (the relay may raise towards it)."""
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))


def _serve(folder: Path, *extra: str, root: Path = ROOT,
           stock_limit: bool = False) -> tuple[subprocess.Popen[bytes], int, Path]:
    """``posewire serve`` of the checkout ``root`` (this one, or ``--before``'s) on a free
    port; ``stock_limit``: started with a soft descriptor limit of 1,024."""
    port = relay_bench._free_port()
    log_path = folder / f"relay-{port}.log"
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("POSEWIRE_TOKEN", None)
    python = sys.executable if root == ROOT else str(root / ".venv" / "bin" / "python")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([python, "-m", "posewire.cli", "serve", "--port", str(port),
                                 "--status-every", "0", *extra],
                                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root,
                                preexec_fn=_stock_limit if stock_limit else None)
    relay_bench._wait_port(port, proc, 30.0)
    return proc, port, log_path


async def _handshake(port: int, *, source: str = "127.0.0.1", rcvbuf: int | None = None,
                     hello: bytes | None = None) -> socket.socket:
    """A raw WebSocket client: the upgrade and (unless ``hello`` is b"") a consumer hello;
    the relay's answer is left unread."""
    from posewire.codec.protocol import Connection

    if hello is None:
        hello = Connection(side="client", role="consumer").hello("bench")
    return await raw_upgrade(port, source=source, rcvbuf=rcvbuf, hello=hello, timeout=10.0)


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


# ---------------------------------------------------------------- a slow link under a flood


#: The flood's loopback addresses: 1,200 of 127.0.1.1–127.0.5.200 (never the clients').
def _flood_addresses(n: int) -> list[str]:
    return [f"127.0.{1 + i // 250}.{1 + i % 250}" for i in range(n)]


def flood_worker(port: int, rate: float, seconds: float, addresses: int, hold: float) -> dict[str, Any]:
    """Open hello-less TCP connections to ``port`` at ``rate`` per second for ``seconds``,
    from ``addresses`` loopback addresses in turn, each held until ``hold`` s old (the
    relay closes them sooner: evicted, refused or at its hello deadline). Run in its own
    process (``--flood-worker``), so the clients' timing is not the flood's."""
    import errno
    import resource
    from collections import deque

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    addrs = _flood_addresses(addresses)
    held: deque[tuple[float, socket.socket]] = deque()
    opened = failed = established = 0
    began = time.monotonic()
    now = began
    while now - began < seconds:
        due = int((now - began) * rate)
        while opened + failed < due:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                sock.bind((addrs[(opened + failed) % len(addrs)], 0))
                err = sock.connect_ex(("127.0.0.1", port))
            except OSError:
                err = -1
            if err not in (0, errno.EINPROGRESS):
                failed += 1
                sock.close()
                continue
            opened += 1
            held.append((now, sock))
        while held and now - held[0][0] > hold:
            old = held.popleft()[1]
            with contextlib.suppress(OSError):
                old.getpeername()  # connected (else still waiting for the relay's SYN-ACK)
                established += 1
            old.close()
        time.sleep(0.002)
        now = time.monotonic()
    elapsed = now - began
    for _, sock in held:
        with contextlib.suppress(OSError):
            sock.getpeername()
            established += 1
        sock.close()
    return {"opened": opened, "failed": failed, "established": established,
            "seconds": round(elapsed, 2), "rate_per_s": round(opened / elapsed),
            "established_per_s": round(established / elapsed), "addresses": len(addrs)}


async def _client(port: int, source: str, spread: float) -> tuple[bool, float, str]:
    """One consumer from ``source`` to its welcome, its upgrade request spread over
    ``spread`` s (0: at once): (welcomed, seconds from connect, what failed)."""
    from posewire.codec.protocol import Connection

    began = time.monotonic()
    try:
        sock = await raw_upgrade(port, source=source, pieces=10 if spread else 1,
                                 spread=spread, welcome=True, timeout=10.0,
                                 hello=Connection(side="client", role="consumer").hello("bench"))
    except (OSError, TimeoutError) as exc:
        return False, time.monotonic() - began, type(exc).__name__ + (f": {exc}" if str(exc) else "")
    sock.close()
    return True, time.monotonic() - began, ""


async def bench_slowlink(folder: Path, *, root: Path = ROOT, rate: float = 1600.0,
                         addresses: int = 1200, tries: int = 6, spread: float = 1.0
                         ) -> dict[str, Any]:
    proc, port, log_path = _serve(folder, "--status-every", "1", root=root)
    seconds = 2.0 + tries * (spread + 1.6) + 1.0
    flood = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--flood-worker",
         json.dumps([port, rate, seconds, addresses, 3.5])],
        stdout=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)
    slow: list[tuple[bool, float, str]] = []
    fast: list[tuple[bool, float, str]] = []
    try:
        await asyncio.sleep(2.0)  # the relay at its cap, turning it over
        cpu0, t0 = hello_flood_bench._cpu_s(proc.pid), time.monotonic()
        before = relay_bench._relay_counters(log_path)
        for i in range(tries):
            got = await asyncio.gather(_client(port, f"127.0.0.{10 + i}", spread),
                                       *(_client(port, f"127.0.0.{40 + 3 * i + j}", 0.0)
                                         for j in range(3)))
            slow.append(got[0])
            fast.extend(got[1:])
            await asyncio.sleep(0.5)
        cpu, wall = hello_flood_bench._cpu_s(proc.pid) - cpu0, time.monotonic() - t0
        after = relay_bench._relay_counters(log_path)
        out, _ = await asyncio.get_running_loop().run_in_executor(None, flood.communicate)
    finally:
        if flood.poll() is None:
            flood.kill()
            flood.wait()
        relay_bench._stop(proc)
    flooded = json.loads(out.decode().strip().splitlines()[-1])
    shed = {k: after.get(k, 0) - before.get(k, 0) for k in ("evicted", "refused", "handshake_timeouts")}
    return {"flood": flooded, "relay_cpu": round(cpu / wall, 2),
            "relay_shed_per_s": round(sum(shed.values()) / wall), "relay": shed,
            "slow_spread_s": spread, "slow_welcomed": sum(ok for ok, _, _ in slow),
            "slow_tries": len(slow), "slow_failures": [why for ok, _, why in slow if not ok],
            "fast_welcomed": sum(ok for ok, _, _ in fast), "fast_tries": len(fast),
            "fast_max_s": round(max(t for _, t, _ in fast), 2),
            "slow_s": [round(t, 2) for _, t, _ in slow]}


# ---------------------------------------------------------------- PROXY protocol costs


def _descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def bench_proxy(folder: Path, *, root: Path = ROOT, n: int = 1000,
                      span: float = 5.0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for option, extra in (("off", ()), ("on", ("--proxy-protocol", "--trusted-proxy", "10.255.255.1/32"))):
        for sends in (b"", b"P"):
            proc, port, log_path = _serve(folder, "--hello-timeout", "60", "--status-every", "1",
                                          *extra, root=root, stock_limit=True)
            held: list[socket.socket] = []
            try:
                for i in range(n):
                    sock = socket.create_connection(("127.0.0.1", port), timeout=5,
                                                    source_address=(f"127.0.0.{2 + i % 8}", 0))
                    if sends:
                        sock.sendall(sends)
                    held.append(sock)
                await asyncio.sleep(1.5)
                cpu0, t0 = hello_flood_bench._cpu_s(proc.pid), time.monotonic()
                await asyncio.sleep(span)
                cpu = (hello_flood_bench._cpu_s(proc.pid) - cpu0) / (time.monotonic() - t0)
                fds = _descriptors(proc.pid)
                welcomed, legit_s, _ = await _client(port, "127.0.0.30", 0.0)
                counters = relay_bench._relay_counters(log_path)
            finally:
                for sock in held:
                    sock.close()
                relay_bench._stop(proc)
            out[f"option_{option}_{'one_byte' if sends else 'silent'}"] = {
                "cpu_s_per_s": round(cpu, 3), "descriptors": fds,
                "connections": counters.get("connections"),
                "accept_failed": counters.get("accept_failed"),
                "legit_welcomed": welcomed, "legit_s": round(legit_s, 3)}
    return out


# ---------------------------------------------------------------- the broker (spec §5.7.1)


#: the passwords of docs/nats-posewire.conf in the broker rows (and tests/test_broker_forgery.py)
BROKER_ENV = {"POSEWIRE_RELAY1_PASS": "relay1-pw", "POSEWIRE_RELAY2_PASS": "relay2-pw",
              "POSEWIRE_RELAY3_PASS": "relay3-pw", "POSEWIRE_MONITOR_PASS": "monitor-pw",
              "APPS_PASS": "apps-pw"}
BROKER_RATE = 60.0


def broker_url(port: int, user: str) -> str:
    return f"nats://{user}:{user}-pw@127.0.0.1:{port}"


class RealFrames:
    """A raw consumer's arrival times of the producer's frames (``m_jaw`` unset) and the
    count of forged ones (``m_jaw`` = 0.9), read in the background."""

    def __init__(self, client: Any) -> None:
        from posewire.codec.registry import REGISTRY

        self.client = client
        self.times: list[float] = []
        self.forged = 0
        self.calibrations: list[float] = []
        self._jaw = REGISTRY.index("m_jaw")
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        from websockets.exceptions import ConnectionClosed

        from posewire.codec.wire import Calibration, Frame, decode

        with contextlib.suppress(ConnectionClosed):
            async for data in self.client.ws:
                msg = decode(data)  # type: ignore[arg-type]
                if isinstance(msg, Calibration):
                    self.calibrations.append(time.monotonic())
                elif isinstance(msg, Frame):
                    if abs(float(msg.values[self._jaw]) - 0.9) < 1e-3:
                        self.forged += 1
                    else:
                        self.times.append(time.monotonic())

    def longest_gap(self, since: float, until: float) -> float:
        """The longest time in [since, until] without a real frame."""
        edges = [since, *(t for t in self.times if since < t < until), until]
        return max(b - a for a, b in itertools.pairwise(edges))

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        self.client.ws.transport.abort()


def broker_frame(seq: int, *, forged: bool = False) -> bytes:
    import numpy as np

    from posewire.codec.registry import REGISTRY
    from posewire.codec.vector import N_DIMS
    from posewire.codec.wire import Frame, encode

    values = np.full(N_DIMS, np.nan)
    values[REGISTRY.index("h_yaw")] = (seq % 100) / 100
    if forged:
        values[REGISTRY.index("m_jaw")] = 0.9
    return encode(Frame(seq, 1_000 + seq * 16_667, values))


async def bench_broker(folder: Path, *, watch: float = 4.0, lease_ttl: float = 5.0) -> dict[str, Any]:
    import nats
    import nats.errors
    import nats.js.errors
    from cluster_bench import NatsServer

    from posewire.codec.wire import Calibration
    from posewire.relay import Relay
    from posewire.relay.cluster import Broker, stream_token

    conf = (ROOT / "docs" / "nats-posewire.conf").read_text()
    server = NatsServer(folder / "nats-broker", config=conf, env=BROKER_ENV).start()
    relays = [Relay("127.0.0.1", 0, broker=Broker(broker_url(server.port, f"relay{n}"),
                                                  lease_ttl=lease_ttl, state_interval=0.02))
              for n in (1, 2, 3)]
    stream, token = "victim.live", stream_token("victim.live")
    out: dict[str, Any] = {"liveness_timeout_s": 3.0, "lease_ttl_s": lease_ttl}
    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(str(exc))

    seq = 0
    stop = asyncio.Event()
    watchers: list[RealFrames] = []
    attacker = None
    try:
        for r in relays:
            await r.start()
        r1, r2, r3 = relays
        prod = await open_raw(r1.url, "producer", stream)
        await prod.send(Calibration(0.19, 0.50, 0.56, 0.36))

        async def produce() -> None:
            nonlocal seq
            while not stop.is_set():
                await prod.ws.send(broker_frame(seq))
                seq += 1
                await asyncio.sleep(1 / BROKER_RATE)

        producing = asyncio.create_task(produce())
        watchers = [RealFrames(await open_raw(r.url, "consumer", stream)) for r in (r2, r3)]
        attacker = await nats.connect(broker_url(server.port, "relay3"), error_cb=on_error)
        js = attacker.jetstream(timeout=1.0)
        await asyncio.sleep(1.0)

        def row(began: float) -> dict[str, Any]:
            until = time.monotonic()
            return {"gap_s": round(max(w.longest_gap(began, until) for w in watchers), 3),
                    "forged_frames_delivered": sum(w.forged for w in watchers),
                    "producer_lost_stream": (r1.broker is not None
                                             and r1.broker.stats.leases_lost > 0)}

        # (a) one forged frame 500 ahead, on the attacker's own subject and on relay1's
        began = time.monotonic()
        for subject in (f"posewire.s.{token}.relay3", f"posewire.s.{token}.relay1"):
            await attacker.publish(subject, broker_frame(seq + 500, forged=True))
            await attacker.publish(subject, broker_frame(seq + 501, forged=True),
                                   headers={"Posewire-Producer": "forged"})
        await attacker.flush()
        await asyncio.sleep(watch)
        out["forged_frame"] = row(began)

        # (b) relay1's claim and heartbeat deleted, the stream squatted
        began = time.monotonic()
        for bucket in ("claim", "beat"):
            await attacker.publish(f"$KV.posewire_{bucket}.{token}.relay1", b"",
                                   headers={"KV-Operation": "DEL"})
        deleted = []
        for api in ("$JS.API.STREAM.MSG.DELETE.KV_posewire_claim",
                    "$JS.API.STREAM.PURGE.KV_posewire_claim"):
            try:
                await attacker.request(api, b'{"seq": 1}', timeout=0.5)
                deleted.append(api)
            except nats.errors.Error:
                pass  # a permission violation: no answer
        async with holding(attacker, stream, "relay3", ttl=lease_ttl) as subject:
            squat_began = time.monotonic()
            while time.monotonic() - squat_began < watch:
                await attacker.publish(subject, broker_frame(seq + 500, forged=True),
                                       headers={"Posewire-Producer": "forged"})
                await asyncio.sleep(1 / BROKER_RATE)
        out["squatted_lease"] = {**row(began), "api_deletes_answered": deleted}

        # (c) rollup and purge of the late-join state
        began = time.monotonic()
        refused: dict[str, str] = {}
        for key in (f"{token}.cal.relay3", f"{token}.cal.relay1"):
            try:
                await js.publish(f"$KV.posewire_joinstate.{key}", b"",
                                 headers={"Nats-Rollup": "all"}, timeout=0.5)
                refused[key] = "accepted"
            except nats.js.errors.APIError as exc:
                refused[key] = f"refused: {exc.description}"
            except nats.errors.TimeoutError:
                refused[key] = "refused: no permission"
        try:
            await js.purge_stream("KV_posewire_joinstate")
            refused["STREAM.PURGE"] = "accepted"
        except nats.errors.TimeoutError:
            refused["STREAM.PURGE"] = "refused: no permission"
        except nats.js.errors.APIError as exc:
            refused["STREAM.PURGE"] = f"refused: {exc.description}"
        out["purged_state"] = {**row(began), "broker": refused}
        # a late joiner on a cold relay: relay2's consumer leaves, a new one joins
        await watchers[0].close()
        watchers = watchers[1:]
        assert r2.broker is not None
        for _ in range(100):
            if stream not in r2.broker._subs:
                break
            await asyncio.sleep(0.02)
        joined = time.monotonic()
        late = RealFrames(await open_raw(r2.url, "consumer", stream))
        watchers.append(late)
        for _ in range(int(lease_ttl / 0.02)):
            if late.calibrations:
                break
            await asyncio.sleep(0.02)
        out["purged_state"]["late_joiner_calibration_s"] = (
            round(late.calibrations[0] - joined, 3) if late.calibrations else None)
        out["permission_violations"] = sum("ermissions violation" in e for e in errors)
        stop.set()
        await producing
    finally:
        stop.set()
        for w in watchers:
            await w.close()
        if attacker is not None:
            await attacker.close()
        for r in relays:
            await r.close()
        server.stop()
    return out


BENCHES: dict[str, Callable[..., Any]] = {
    "tokens": bench_tokens, "pings": bench_pings, "forged": bench_forged,
    "length": bench_length, "origin": bench_origin, "backoff": bench_backoff,
    "slowlink": bench_slowlink, "proxy": bench_proxy, "broker": bench_broker,
}


async def _run(only: list[str], seconds: float, folder: Path, *, before: Path | None = None,
               flood_rate: float = 1600.0) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in only:
        if name == "tokens":
            results[name] = await bench_tokens(folder, seconds)
        elif name == "backoff":
            results[name] = await bench_backoff()
        elif name in ("slowlink", "proxy"):
            kwargs: dict[str, Any] = {"rate": flood_rate} if name == "slowlink" else {}
            for label, root in ([("before", before)] if before is not None else []) + [("after", ROOT)]:
                key = f"{name}_{label}" if before is not None else name
                results[key] = await BENCHES[name](folder, root=root, **kwargs)
                print(f"{key}: {json.dumps(results[key], ensure_ascii=False)}", flush=True)
            continue
        else:
            results[name] = await BENCHES[name](folder)
        print(f"{name}: {json.dumps(results[name], ensure_ascii=False)}", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(BENCHES), help="comma-separated rows to run")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the token guessing")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--flood-rate", type=float, default=1600.0,
                        help="hello-less connections per second of the slowlink flood")
    parser.add_argument("--before", metavar="ROOT", type=Path,
                        help="also run slowlink and proxy against this checkout's relay")
    parser.add_argument("--flood-worker", metavar="JSON", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.flood_worker:
        print(json.dumps(flood_worker(*json.loads(args.flood_worker))), flush=True)
        return 0
    only = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in only if n not in BENCHES]
    if unknown:
        parser.error(f"unknown rows: {', '.join(unknown)}")
    with tempfile.TemporaryDirectory() as tmp:
        results = asyncio.run(_run(only, args.seconds, Path(tmp), before=args.before,
                                   flood_rate=args.flood_rate))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
