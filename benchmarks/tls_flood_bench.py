"""Hello-less TLS flood against an exposed relay (spec §5.7 rule 8).

Run: ``.venv/bin/python benchmarks/tls_flood_bench.py [--flood 4000] [--nofile 1100]
[--legit 10] [--json PATH]``.

A real ``posewire serve`` process with a fresh self-signed certificate and the default
caps runs under ``ulimit -n --nofile``. An attacker (this process) opens ``--flood`` TCP
connections from 127.0.0.2 that never send a TLS ClientHello and holds them; meanwhile
``--legit`` :class:`~posewire.consumers.subscriber.Subscriber` clients from 127.0.0.1
connect one after the other (each may retry for up to 5 s). Reported: the relay's RSS
before and with the flood, the legitimate connects that succeeded, the relay's log size
and the tracebacks in it, the relay's status counters. Before the handshake deadline of §5.7 rule 8 (TLS handshakes
not counted at admission, up to 1,024 accepts per loop pass) the relay grew from
≈ 50 MiB to ≈ 400 MiB with 4,000 such connections and wrote 23.6 MB of log (46,617
tracebacks) in seconds; the target is under 200 MB and 10 of 10 connects.

Needs ``cryptography`` (the ``dev`` extra) for the certificate.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by the tests
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import relay_bench  # free port, waiting for the relay, stopping it


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def _attack(port: int, flood: int) -> list[asyncio.StreamWriter]:
    held: list[asyncio.StreamWriter] = []
    for _ in range(flood):
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection("127.0.0.1", port,
                                                      local_addr=("127.0.0.2", 0))
            held.append(writer)
    return held


async def _legit(url: str, ca: Path, n: int) -> tuple[int, list[str]]:
    from posewire.consumers.subscriber import Subscriber

    ok, errors = 0, []
    for _ in range(n):
        try:
            async with asyncio.timeout(5.0):
                async with Subscriber(url, "bench", ca_file=ca, backoff_initial=0.05) as sub:
                    ok += sub.connected
        except Exception as exc:  # reported; the run goes on
            errors.append(f"{type(exc).__name__}: {exc}"[:200])
    return ok, errors


async def _run(flood: int, nofile: int, legit: int, folder: Path) -> dict[str, Any]:
    cert, key = relay_bench.self_signed(folder, cn="tls flood bench")
    port = relay_bench._free_port()
    log_path = folder / "relay.log"
    cmd = (f"ulimit -n {nofile} && exec {shlex.quote(sys.executable)} -m posewire.cli serve "
           f"--port {port} --tls-cert {shlex.quote(str(cert))} --tls-key {shlex.quote(str(key))} "
           "--status-every 1")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(["bash", "-c", cmd], stdout=log, stderr=subprocess.STDOUT)
    try:
        relay_bench._wait_port(port, proc, 30.0)
        rss_start = _rss_mib(proc.pid)
        began = time.monotonic()
        held = await _attack(port, flood)
        opened_s = time.monotonic() - began
        await asyncio.sleep(0.5)
        rss_flood = _rss_mib(proc.pid)
        ok, errors = await _legit(f"wss://127.0.0.1:{port}", cert, legit)
        rss_end = _rss_mib(proc.pid)
        for writer in held:
            writer.close()
        await asyncio.sleep(1.2)  # one more status line
    finally:
        relay_bench._stop(proc)
    text = log_path.read_text(errors="replace")
    status = [line for line in text.splitlines() if line.startswith("posewire relay:")]
    counters = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", status[-1])} if status else {}
    return {"flood": flood, "nofile": nofile, "opened": len(held), "opened_s": round(opened_s, 2),
            "rss_start_mib": round(rss_start, 1), "rss_flood_mib": round(rss_flood, 1),
            "rss_end_mib": round(rss_end, 1), "legit": legit, "legit_ok": ok,
            "legit_errors": errors, "log_bytes": len(text.encode()),
            "tracebacks": text.count("Traceback"), "relay": counters}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=4000, help="hello-less TCP connections")
    parser.add_argument("--nofile", type=int, default=1100, help="the relay's descriptor limit")
    parser.add_argument("--legit", type=int, default=10, help="legitimate connects")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.flood + 256
    if soft != resource.RLIM_INFINITY and soft < want:  # the attacker's own descriptors
        resource.setrlimit(resource.RLIMIT_NOFILE, (want if hard == resource.RLIM_INFINITY
                                                    else min(hard, want), hard))
    with tempfile.TemporaryDirectory() as tmp:
        r = asyncio.run(_run(args.flood, args.nofile, args.legit, Path(tmp)))
    relay = r["relay"]
    print("| flood | relay RSS MiB (start → flood → end) | legit connects | log bytes "
          "| tracebacks | refused | handshake timeouts | accept failed |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    print(f"| {r['opened']} of {r['flood']} | {r['rss_start_mib']} → {r['rss_flood_mib']} → "
          f"{r['rss_end_mib']} | {r['legit_ok']}/{r['legit']} | {r['log_bytes']} "
          f"| {r['tracebacks']} | {relay.get('refused', '?')} "
          f"| {relay.get('handshake_timeouts', '?')} | {relay.get('accept_failed', '?')} |")
    for err in r["legit_errors"]:
        print(f"legitimate connect failed: {err}")
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
