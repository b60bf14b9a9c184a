"""Hello flood from one address against a TLS relay (spec §5.7 rule 8).

Run: ``.venv/bin/python benchmarks/hello_flood_bench.py [--seconds 10] [--workers 16]
[--json PATH]``.

A real ``posewire serve`` process with a fresh self-signed certificate; this process
opens connections from 127.0.0.2 as fast as ``--workers`` concurrent loops can, each
doing the TLS handshake, the WebSocket handshake and a consumer hello, then reading
until the relay closes it. Reported: connections tried and welcomed, the relay's CPU
(user + system seconds per second of flood, from ``/proc``), whether a client from
127.0.0.1 is welcomed meanwhile, and the relay's counters. Before the hello rate of §5.7 rule 8 the hello
rate (50/s, burst 200) was checked after both handshakes, so every connection of the
flood cost the relay a full TLS handshake; now connections beyond twice that rate are
closed at accept, before any handshake.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by the tests
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import relay_bench  # free port, waiting for the relay, stopping it
import tls_flood_bench  # the certificate


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _flood(port: int, ctx: ssl.SSLContext, seconds: float, workers: int) -> list[int]:
    from websockets.asyncio.client import connect
    from websockets.typing import Subprotocol

    from posewire.codec.protocol import Connection
    from posewire.codec.wire import SUBPROTOCOL, Welcome, decode

    counts = [0, 0]  # tried, welcomed
    stop = time.monotonic() + seconds
    hello = Connection(side="client", role="consumer").hello("bench")

    async def worker() -> None:
        import socket

        while time.monotonic() < stop:
            counts[0] += 1
            sock = socket.socket()
            sock.bind(("127.0.0.2", 0))
            sock.setblocking(False)
            try:
                async with asyncio.timeout(5):
                    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
                    ws = await connect(f"wss://127.0.0.1:{port}", ssl=ctx, sock=sock,
                                       server_hostname="127.0.0.1", proxy=None,
                                       subprotocols=[Subprotocol(SUBPROTOCOL)],
                                       compression=None)
                    async with ws:
                        await ws.send(hello)
                        data = await ws.recv()
                        counts[1] += isinstance(data, bytes) and isinstance(decode(data), Welcome)
            except Exception:  # refused, closed, rate limited
                pass
            finally:
                sock.close()

    await asyncio.gather(*(worker() for _ in range(workers)))
    return counts


async def _legit(port: int, ctx: ssl.SSLContext) -> bool:
    import socket

    from websockets.asyncio.client import connect
    from websockets.typing import Subprotocol

    from posewire.codec.protocol import Connection
    from posewire.codec.wire import SUBPROTOCOL, Welcome, decode

    await asyncio.sleep(1.0)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.setblocking(False)
    try:
        async with asyncio.timeout(10):
            await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
            async with await connect(f"wss://127.0.0.1:{port}", ssl=ctx, sock=sock,
                                     server_hostname="127.0.0.1", proxy=None,
                                     subprotocols=[Subprotocol(SUBPROTOCOL)],
                                     compression=None) as ws:
                await ws.send(Connection(side="client", role="consumer").hello("bench"))
                data = await ws.recv()
                return isinstance(data, bytes) and isinstance(decode(data), Welcome)
    except Exception:
        return False
    finally:
        sock.close()


async def _run(seconds: float, workers: int, folder: Path) -> dict[str, Any]:
    cert, key = tls_flood_bench.relay_bench.self_signed(folder, cn="hello flood bench")
    ctx = ssl.create_default_context(cafile=str(cert))
    port = relay_bench._free_port()
    log_path = folder / "relay.log"
    cmd = [sys.executable, "-m", "posewire.cli", "serve", "--port", str(port),
           "--tls-cert", str(cert), "--tls-key", str(key), "--status-every", "1"]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        relay_bench._wait_port(port, proc, 30.0)
        cpu0, t0 = _cpu_s(proc.pid), time.monotonic()
        (tried, welcomed), legit = await asyncio.gather(_flood(port, ctx, seconds, workers),
                                                        _legit(port, ctx))
        cpu, wall = _cpu_s(proc.pid) - cpu0, time.monotonic() - t0
        await asyncio.sleep(1.2)  # one more status line
    finally:
        relay_bench._stop(proc)
    text = log_path.read_text(errors="replace")
    status = [line for line in text.splitlines() if line.startswith("posewire relay:")]
    counters = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", status[-1])} if status else {}
    return {"seconds": round(wall, 2), "workers": workers, "tried": tried,
            "welcomed": welcomed, "relay_cpu": round(cpu / wall, 3), "legit_ok": legit,
            "log_bytes": len(text.encode()), "tracebacks": text.count("Traceback"),
            "relay": counters}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the flood")
    parser.add_argument("--workers", type=int, default=16, help="concurrent connect loops")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        r = asyncio.run(_run(args.seconds, args.workers, Path(tmp)))
    relay = r["relay"]
    print("| flood (s) | connections tried | welcomed | relay CPU (s/s) | legit connect "
          "| refused | rate limited | log bytes | tracebacks |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    print(f"| {r['seconds']} | {r['tried']} | {r['welcomed']} | {r['relay_cpu']} "
          f"| {'yes' if r['legit_ok'] else 'no'} | {relay.get('refused', '?')} "
          f"| {relay.get('rate_limited', '?')} | {r['log_bytes']} | {r['tracebacks']} |")
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
