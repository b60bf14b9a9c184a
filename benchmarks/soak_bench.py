"""Soak and fault benchmark of an exposed relay (spec §5.7, §5.8), on loopback only.

Run: ``.venv/bin/python benchmarks/soak_bench.py [--duration 60] [--healthy 90]
[--slow 10] [--flood 2000] [--cap 1000] [--json PATH]``.

Three parts, each against a real ``posewire serve`` process (the CLI, default settings
unless named):

1. **soak** — one producer (:class:`~posewire.producers.publisher.Publisher`, 60 Hz,
   full frames stamped with the wall clock) to ``--healthy`` raw websocket consumers that
   read everything and ``--slow`` :class:`~posewire.consumers.subscriber.Subscriber`
   consumers whose application reads only ``--slow-hz`` times a second, for
   ``--duration`` seconds. Reported: healthy loss (sequence numbers sent but never
   received, over all healthy consumers), healthy end-to-end latency p50/p99/max, the
   slow consumers' **frame age** at each application read (now − the yielded frame's
   timestamp) p50/p99/max, the relay's drops, and the relay's RSS over the run (psutil).
2. **flood** — a relay with ``--max-connections --cap`` gets ``--flood`` connections that
   never say hello (bare TCP from several loopback addresses, 127.0.0.2…, at most 250 per
   address), re-opened as soon as the relay closes them, for ``--flood-seconds``, from an
   attacker process of its own (``nice 10``: on a network the attacker has its own
   machines; here it must not take the shared CPUs from the relay); meanwhile a
   legitimate consumer from 127.0.0.1 connects once a second. Reported: its connect →
   welcome time (p50, max), the connections the relay evicted/refused, the relay's CPU
   and the size of the relay's log.
3. **half-open producer** — on the same relay (default ping settings), a producer stops
   reading (its pings go unanswered, nothing is closed); a new ``Publisher`` with default
   settings connects to the same stream. Reported: hello → connected time.

Worker processes (this file with ``--worker``) run the consumers, so the relay, the
producer and the consumers each have their own process. Every child has a deadline;
everything stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
TOKEN = "soak-token"
#: connections per loopback source address in the flood (below the per-address cap)
PER_ADDRESS = 250
#: seconds between the producer's last frame and counting
GRACE_S = 5.0
#: healthy consumers per worker process
PER_WORKER = 30


if str(HERE.parent) not in sys.path:  # loaded by the tests: the scripts beside this one
    sys.path.insert(0, str(HERE.parent))
import relay_bench  # noqa: E402  (relay process, raw client handshake)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def _serve_cmd(port: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "posewire.cli", "serve", "--port", str(port), "--token", TOKEN,
            "--status-every", "1", *extra]


def _start(cmd: list[str], log: Any, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    relay_bench._wait_port(port, proc, 20.0)
    return proc


def _last_status(log_path: Path) -> dict[str, int]:
    last = ""
    for line in log_path.read_text(errors="replace").splitlines():
        if line.startswith("posewire relay: streams="):
            last = line
    out = {}
    for part in last.split()[2:]:
        key, _, value = part.partition("=")
        if value.isdigit():
            out[key] = int(value)
    return out


# ---------------------------------------------------------------- workers (child processes)


async def _healthy(url: str, stream: str, n: int, out: dict[str, Any], ready: asyncio.Event,
                   stop: asyncio.Event) -> None:
    import msgpack

    got: list[set[int]] = [set() for _ in range(n)]
    lat: list[float] = []

    async def one(i: int) -> None:
        ws = await relay_bench._connect(url).__aenter__()
        await relay_bench._handshake(ws, "consumer", stream, TOKEN, f"soak-h{i}")
        connected.append(i)
        if len(connected) == n:
            ready.set()
        async for data in ws:
            now_us = time.time_ns() // 1000
            # seq and timestamp only (the relay's delivery is measured, not the decoder):
            # the consumer processes share the CPUs with the relay
            obj = msgpack.unpackb(data)
            if obj.get("t") == "f":
                got[i].add(obj["s"])
                lat.append((now_us - obj["ts"]) / 1000)

    connected: list[int] = []
    tasks = [asyncio.create_task(one(i)) for i in range(n)]
    await stop.wait()
    for t in tasks:
        t.cancel()
    out.update(seqs=[sorted(s) for s in got], latency_ms=lat)


async def _slow(url: str, stream: str, n: int, hz: float, out: dict[str, Any], ready: asyncio.Event,
                stop: asyncio.Event) -> None:
    from posewire.consumers.subscriber import Subscriber

    ages: list[float] = []
    merged: list[int] = []
    subs = [Subscriber(url, stream, token=TOKEN, client=f"soak-s{i}", reconnect=False) for i in range(n)]
    for sub in subs:
        await sub.connect()
    ready.set()

    async def app(sub: Subscriber) -> None:
        while True:
            frame = await sub.recv()
            if frame is None:
                return
            ages.append(time.time() * 1000 - frame.timestamp_us / 1000)
            merged.append(frame.merged)
            await asyncio.sleep(1 / hz)  # the application is busy between reads

    tasks = [asyncio.create_task(app(s)) for s in subs]
    await stop.wait()
    for t in tasks:
        t.cancel()
    out.update(age_ms=ages, merged=merged, received=sum(s.frames_received for s in subs))


async def _worker_main(args: argparse.Namespace) -> None:
    out: dict[str, Any] = {}
    ready, stop = asyncio.Event(), asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.call_later(args.max_seconds, stop.set)
    if args.worker == "healthy":
        job = asyncio.create_task(_healthy(args.url, args.stream, args.count, out, ready, stop))
    else:
        job = asyncio.create_task(_slow(args.url, args.stream, args.count, args.hz, out, ready, stop))
    await asyncio.wait([asyncio.create_task(ready.wait()), job], return_when=asyncio.FIRST_COMPLETED)
    print("READY", flush=True)
    await loop.run_in_executor(None, sys.stdin.readline)  # the orchestrator says stop
    stop.set()
    await job
    print("RESULT " + json.dumps(out), flush=True)


async def _producer_main(args: argparse.Namespace) -> None:
    from posewire.codec.vector import DEFAULTS
    from posewire.producers.publisher import Publisher
    from posewire.transport import RelayError

    async with Publisher(args.url, args.stream, token=TOKEN, client="soak-producer") as pub:
        first = pub.seq
        start = time.monotonic()
        k = 0
        while time.monotonic() - start < args.seconds:
            due = start + k / args.rate
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            vec = DEFAULTS.copy()
            vec[0] = math.sin(k / 30)
            with contextlib.suppress(RelayError):  # non-fatal: the link is down, reconnecting
                await pub.send_frame(vec)
            k += 1
        print("RESULT " + json.dumps({"first": first, "last": pub.seq - 1, "sent": pub.frames_sent,
                                      "dropped": pub.frames_dropped, "reconnects": pub.reconnects}),
              flush=True)


def _child(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(HERE), *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def _read_tag(proc: subprocess.Popen[str], tag: str, timeout: float) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"child exited ({proc.poll()}) before {tag}")
        if line.startswith(tag):
            return line[len(tag):].strip()
    raise RuntimeError(f"no {tag} within {timeout} s")


# ---------------------------------------------------------------- 1. soak


def soak(*, duration: float, healthy: int, slow: int, slow_hz: float, rate: float,
         log_path: Path) -> dict[str, Any]:
    import psutil

    port = relay_bench._free_port()
    with open(log_path, "wb") as log:
        relay = _start(_serve_cmd(port), log, port)
    url, stream = f"ws://127.0.0.1:{port}", "soak"
    limit = str(duration + 120)
    try:
        shares = [min(PER_WORKER, healthy - i) for i in range(0, healthy, PER_WORKER)]
        workers = [_child("--worker", "slow", "--count", str(slow), "--hz", str(slow_hz), "--url", url,
                          "--stream", stream, "--max-seconds", limit)]
        workers += [_child("--worker", "healthy", "--count", str(n), "--url", url, "--stream", stream,
                           "--max-seconds", limit) for n in shares]
        for w in workers:
            _read_tag(w, "READY", 60)
        ps = psutil.Process(relay.pid)
        rss = [ps.memory_info().rss / 2**20]
        cpu0 = sum(ps.cpu_times()[:2])
        producer = _child("--producer", "--url", url, "--stream", stream, "--seconds", str(duration),
                          "--rate", str(rate))
        t0 = time.monotonic()
        while producer.poll() is None and time.monotonic() - t0 < duration + 30:
            time.sleep(1.0)
            rss.append(ps.memory_info().rss / 2**20)
        sent = json.loads(_read_tag(producer, "RESULT", 10))
        cpu = (sum(ps.cpu_times()[:2]) - cpu0) / (time.monotonic() - t0)
        time.sleep(GRACE_S)  # the last frames arrive
        results = []
        for w in workers:
            assert w.stdin is not None
            w.stdin.write("stop\n")
            w.stdin.flush()
            results.append(json.loads(_read_tag(w, "RESULT", 60)))
        counters = _last_status(log_path)
    finally:
        relay_bench._stop(relay)
    expected = set(range(sent["first"], sent["last"] + 1))
    lost = sum(len(expected - set(seqs)) for r in results[1:] for seqs in r["seqs"])
    lat = [x for r in results[1:] for x in r["latency_ms"]]
    ages = results[0]["age_ms"]
    return {
        "duration_s": duration, "rate_hz": rate, "healthy": healthy, "slow": slow, "slow_hz": slow_hz,
        "frames_sent": sent["sent"], "healthy_lost": lost, "producer_reconnects": sent["reconnects"],
        "healthy_latency_ms": {"p50": _pct(lat, 0.5), "p99": _pct(lat, 0.99), "max": _pct(lat, 1.0)},
        "slow_age_ms": {"p50": _pct(ages, 0.5), "p99": _pct(ages, 0.99), "max": _pct(ages, 1.0)},
        "slow_reads": len(ages), "slow_frames_per_read": statistics.mean(results[0]["merged"] or [0]),
        "relay_drops": counters.get("drops", -1), "relay_cpu_core_share": cpu,
        "relay_rss_mb": {"start": rss[0], "end": rss[-1], "max": max(rss)},
    }


# ---------------------------------------------------------------- 2. flood, 3. half-open producer


async def _attack(port: int, flood: int, seconds: float) -> dict[str, Any]:
    """Hold ``flood`` hello-less connections for ``seconds``, re-opening closed ones."""
    held: list[asyncio.StreamWriter] = []
    addresses = [f"127.0.0.{2 + i}" for i in range(math.ceil(flood / PER_ADDRESS))]
    opened = 0
    t_end = time.monotonic() + seconds

    async def attacker(address: str, n: int) -> None:
        nonlocal opened
        live: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        while time.monotonic() < t_end:
            while len(live) < n and time.monotonic() < t_end:
                with contextlib.suppress(OSError):
                    live.append(await asyncio.open_connection("127.0.0.1", port, local_addr=(address, 0)))
                    opened += 1
            await asyncio.sleep(0.05)
            live = [(r, w) for r, w in live if not r.at_eof() and not w.is_closing()]
        held.extend(w for _, w in live)

    await asyncio.gather(*(attacker(a, min(PER_ADDRESS, flood - i * PER_ADDRESS))
                           for i, a in enumerate(addresses)))
    for w in held:
        w.transport.abort()
    return {"flood": flood, "addresses": len(addresses), "opened": opened}


async def _legit(port: int, seconds: float) -> dict[str, Any]:
    """Connect as a legitimate consumer once a second; connect → welcome times."""
    connect_s: list[float] = []
    failures = 0
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        began = time.monotonic()
        try:
            async with asyncio.timeout(10):
                ws = await relay_bench._connect(f"ws://127.0.0.1:{port}").__aenter__()
                await relay_bench._handshake(ws, "consumer", "legit", TOKEN, "legit")
            connect_s.append(time.monotonic() - began)
            await ws.close()
        except Exception:
            failures += 1
        await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - began)))
    return {"legit_connects": len(connect_s), "legit_failures": failures,
            "legit_connect_ms": {"p50": 1000 * statistics.median(connect_s) if connect_s else float("nan"),
                                 "max": 1000 * max(connect_s) if connect_s else float("nan")}}


async def _half_open(port: int) -> dict[str, Any]:
    from posewire.producers.publisher import Publisher

    url = f"ws://127.0.0.1:{port}"
    old = await relay_bench._connect(url).__aenter__()
    await relay_bench._handshake(old, "producer", "takeover", TOKEN, "old-producer")
    old.transport.pause_reading()  # alive at the TCP level, answers nothing
    began = time.monotonic()
    async with Publisher(url, "takeover", token=TOKEN, reconnect=False) as pub:  # default settings
        took = time.monotonic() - began
        await pub.send_frame({"h_yaw": 0.5})
    old.transport.abort()
    return {"replaced_after_s": took}


def flood_and_takeover(*, flood: int, cap: int, seconds: float, log_path: Path) -> dict[str, Any]:
    port = relay_bench._free_port()
    with open(log_path, "wb") as log:
        relay = _start(_serve_cmd(port, "--max-connections", str(cap)), log, port)
    try:
        # the attacker runs in a process of its own: the legitimate client's timing is the
        # relay's, not this process's
        attacker = _child("--attacker", "--port", str(port), "--count", str(flood),
                          "--seconds", str(seconds + 2.0))
        time.sleep(2.0)  # the flood is up: the relay is at its cap
        import psutil

        ps = psutil.Process(relay.pid)
        cpu0, t0 = sum(ps.cpu_times()[:2]), time.monotonic()
        out = asyncio.run(_legit(port, seconds))
        out["relay_cpu_core_share"] = (sum(ps.cpu_times()[:2]) - cpu0) / (time.monotonic() - t0)
        out.update(json.loads(_read_tag(attacker, "RESULT", 60)))
        time.sleep(4.0)  # hello deadlines fire, the status line catches up
        out.update(asyncio.run(_half_open(port)))
        time.sleep(1.5)
        counters = _last_status(log_path)
    finally:
        relay_bench._stop(relay)
    out.update(cap=cap, evicted=counters.get("evicted", -1), refused=counters.get("refused", -1),
               relay_log_bytes=log_path.stat().st_size)
    return out


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of soak")
    parser.add_argument("--healthy", type=int, default=90, help="consumers that read everything")
    parser.add_argument("--slow", type=int, default=10, help="consumers whose application is slow")
    parser.add_argument("--slow-hz", type=float, default=5.0, help="application reads per second of a slow one")
    parser.add_argument("--rate", type=float, default=60.0, help="producer frames per second")
    parser.add_argument("--flood", type=int, default=2000, help="hello-less connections")
    parser.add_argument("--cap", type=int, default=1000, help="the relay's --max-connections")
    parser.add_argument("--flood-seconds", type=float, default=10.0)
    parser.add_argument("--skip", choices=("soak", "flood"), action="append", default=[])
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--worker", choices=("healthy", "slow"), help=argparse.SUPPRESS)
    parser.add_argument("--producer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--attacker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--hz", type=float, default=5.0, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--stream", help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--max-seconds", type=float, default=600.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        asyncio.run(_worker_main(args))
        return 0
    if args.producer:
        asyncio.run(_producer_main(args))
        return 0
    if args.attacker:
        # on a real network the attacker has machines of its own: here it yields the shared
        # CPUs to the relay (the relay's own cost of the flood is what is measured)
        os.nice(10)
        print("RESULT " + json.dumps(asyncio.run(_attack(args.port, args.count, args.seconds))), flush=True)
        return 0

    import tempfile

    results: dict[str, Any] = {"cpus": os.cpu_count(), "load_avg_1m": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        if "soak" not in args.skip:
            s = soak(duration=args.duration, healthy=args.healthy, slow=args.slow, slow_hz=args.slow_hz,
                     rate=args.rate, log_path=Path(tmp) / "soak.log")
            results["soak"] = s
            print(f"soak {s['duration_s']:.0f} s, {s['rate_hz']:.0f} Hz, {s['healthy']} healthy + {s['slow']} slow "
                  f"({s['slow_hz']:g} Hz application) consumers:")
            print(f"  producer: {s['frames_sent']} frames sent, {s['producer_reconnects']} reconnects")
            print(f"  healthy: {s['healthy_lost']} frames lost of {s['frames_sent']} x {s['healthy']}; latency "
                  f"p50 {s['healthy_latency_ms']['p50']:.2f} ms, p99 {s['healthy_latency_ms']['p99']:.2f} ms, "
                  f"max {s['healthy_latency_ms']['max']:.1f} ms")
            print(f"  slow: frame age at each read p50 {s['slow_age_ms']['p50']:.1f} ms, p99 "
                  f"{s['slow_age_ms']['p99']:.1f} ms, max {s['slow_age_ms']['max']:.1f} ms over {s['slow_reads']} "
                  f"reads ({s['slow_frames_per_read']:.1f} frames merged per read); relay drops {s['relay_drops']}")
            print(f"  relay: RSS {s['relay_rss_mb']['start']:.1f} -> {s['relay_rss_mb']['end']:.1f} MB (max "
                  f"{s['relay_rss_mb']['max']:.1f}); CPU {100 * s['relay_cpu_core_share']:.0f} % of one core")
        if "flood" not in args.skip:
            f = flood_and_takeover(flood=args.flood, cap=args.cap, seconds=args.flood_seconds,
                                   log_path=Path(tmp) / "flood.log")
            results["flood"] = f
            print(f"flood: {f['flood']} hello-less connections from {f['addresses']} addresses "
                  f"({f['opened']} opened in all) against --max-connections {f['cap']}:")
            print(f"  legitimate client: {f['legit_connects']} connects, {f['legit_failures']} failures; "
                  f"connect -> welcome p50 {f['legit_connect_ms']['p50']:.1f} ms, max "
                  f"{f['legit_connect_ms']['max']:.1f} ms")
            print(f"  relay: evicted {f['evicted']}, refused {f['refused']}; log {f['relay_log_bytes']} bytes; "
                  f"CPU {100 * f['relay_cpu_core_share']:.0f} % of one core during the flood")
            print(f"half-open producer replaced after {f['replaced_after_s']:.2f} s (default ping settings)")
    results["load_avg_1m_end"] = os.getloadavg()[0]
    print(f"machine: {results['cpus']} CPUs shared with other jobs; load average {results['load_avg_1m']:.1f} "
          f"before, {results['load_avg_1m_end']:.1f} after")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
