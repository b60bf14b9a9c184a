"""Relay fan-out benchmark: one producer at 60 Hz to C consumers over loopback, for
``posewire serve`` and, in the same run, its peer: a minimal relay on
``websockets.broadcast()`` (no validation, no state, no latest-wins, no send window).

Run: ``.venv/bin/python benchmarks/relay_bench.py [--consumers 10 100 300]
[--duration 60] [--repeat N] [--relays posewire minimal] [--json PATH]``.

Both relays are started once, side by side; each level runs against one, then the
other, back to back (the order alternating from level to level), and the script prints,
per level, the CPU per delivered frame of each, their ratio, loss and p50/p99 latency.
For each level C and relay the script

1. uses that relay, started once in its own process on 127.0.0.1 and a free port (a
   fresh stream name per level);
2. starts ``ceil(C / 125)`` consumer worker processes, each running its share of the C
   consumers as asyncio websocket clients (raw ``websockets`` + :func:`posewire.codec.wire.decode`
   — the protocol, not a client library: hello, welcome, then frames; ``--clients
   posewire`` uses the real :class:`posewire.consumers.subscriber.Subscriber` and
   :class:`posewire.producers.publisher.Publisher` instead);
3. when every consumer is connected, starts one producer process that sends full frames
   at 60 Hz for ``--duration`` seconds, each carrying ``timestamp_us =
   time.time_ns() // 1000`` taken just before the send;
4. each consumer records, per frame, the end-to-end latency ``now − timestamp_us``
   (same host clock, taken right after decode) and the sequence numbers it got;
5. after the producer stops (plus a 1.5 s grace), the workers are told the range of
   sequence numbers that were sent and report frames expected vs received per consumer.

Meanwhile the relay process is watched with psutil: CPU % (of one core; >100 % = more
than one core) over the producing interval, peak of 1 s samples, and RSS before the
consumers connect and after they left.

Everything stops by itself: every child has a hard deadline, and the relay is
terminated at the end. Only 127.0.0.1 is used.

Worker and producer are this same file with ``--worker`` / ``--producer`` (internal).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from posewire.codec import wire
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import DEFAULTS

__all__ = [
    "CONSUMERS_PER_WORKER",
    "MINIMAL_RELAY_CMD",
    "RELAYS",
    "LevelResult",
    "compare",
    "comparison_rows",
    "main",
    "run",
    "run_level",
    "start_relay",
]

#: Consumers per worker process.
CONSUMERS_PER_WORKER = 125
#: Seconds a worker waits after the producer stopped before counting.
GRACE_S = 1.5
#: Connections a worker opens at once (the listen backlog is finite).
CONNECT_CONCURRENCY = 25
#: Runs :class:`posewire.relay.Relay` (its defaults: latest-wins mailboxes, 16 KiB send
#: buffer, 120 fps limit) in a process of its own; ``--relay-cmd`` can name another
#: command, e.g. ``posewire serve --host 127.0.0.1 --port {port} --token {token}``.
DEFAULT_RELAY_CMD = "{python} {bench} --serve --port {port} --token {token}"
#: The peer in the same run: a minimal relay on ``websockets.broadcast()``
#: (:func:`_serve_minimal_main`), the floor a relay's fan-out cost is compared with.
MINIMAL_RELAY_CMD = "{python} {bench} --serve-minimal --port {port} --token {token}"
#: ``--relays`` names → relay command templates.
RELAYS = {"posewire": DEFAULT_RELAY_CMD, "minimal": MINIMAL_RELAY_CMD}
HERE = Path(__file__).resolve()


def _url(port: int) -> str:
    return f"ws://127.0.0.1:{port}/"


def _connect(url: str) -> Any:
    from websockets.asyncio.client import connect

    return connect(url, subprotocols=[wire.SUBPROTOCOL], compression=None, proxy=None,  # type: ignore[list-item]
                   open_timeout=60, close_timeout=1, max_size=2**16, ping_interval=None)


async def _handshake(ws: Any, role: str, stream: str, token: str | None, client: str) -> None:
    await ws.send(wire.encode(wire.Hello(role=role, stream=stream, client=client, token=token)))
    answer = wire.decode(await asyncio.wait_for(ws.recv(), 30))
    if not isinstance(answer, wire.Welcome):
        raise RuntimeError(f"{role} {client}: relay answered {answer!r}")


# ---------------------------------------------------------------- consumer worker


@dataclass
class _Consumer:
    seqs: array[int] = field(default_factory=lambda: array("q"))
    lat_us: array[int] = field(default_factory=lambda: array("q"))
    errors: list[str] = field(default_factory=list)
    connected: bool = False


async def _consume(url: str, stream: str, token: str | None, index: int, state: _Consumer,
                   gate: asyncio.Semaphore, ready: asyncio.Event, decode_mode: str) -> None:
    import msgpack

    try:
        async with gate:
            ws = await _connect(url).__aenter__()
            await _handshake(ws, "consumer", stream, token, f"bench-c{index}")
        state.connected = True
        ready.set()
        try:
            async for data in ws:
                now_us = time.time_ns() // 1000
                if decode_mode == "full":
                    msg = wire.decode(data)
                    if isinstance(msg, wire.Frame):
                        state.seqs.append(msg.seq)
                        state.lat_us.append(now_us - msg.timestamp_us)
                else:  # light: read only seq and timestamp
                    obj = msgpack.unpackb(data)
                    if obj.get("t") == "f":
                        state.seqs.append(obj["s"])
                        state.lat_us.append(now_us - obj["ts"])
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), 2)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # recorded, reported by the orchestrator
        state.errors.append(f"{type(exc).__name__}: {exc}")


async def _consume_subscriber(url: str, stream: str, token: str | None, index: int, state: _Consumer,
                              gate: asyncio.Semaphore, ready: asyncio.Event, decode_mode: str) -> None:
    from posewire.consumers.subscriber import Subscriber

    try:
        sub = Subscriber(url.rstrip("/"), stream, token=token, client=f"bench-c{index}", reconnect=False,
                         open_timeout=60)
        async with gate:
            await sub.connect()
        state.connected = True
        ready.set()
        try:
            async for frame in sub:
                state.seqs.append(frame.seq)
                state.lat_us.append(time.time_ns() // 1000 - frame.timestamp_us)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(sub.close(), 2)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # recorded, reported by the orchestrator
        state.errors.append(f"{type(exc).__name__}: {exc}")


async def _worker_main(args: argparse.Namespace) -> None:
    states = [_Consumer() for _ in range(args.consumers)]
    gate = asyncio.Semaphore(CONNECT_CONCURRENCY)
    ready_events = [asyncio.Event() for _ in states]
    consume = _consume_subscriber if args.clients == "posewire" else _consume
    tasks = [asyncio.create_task(consume(args.url, args.stream, args.token, args.first_index + i, s,
                                          gate, ev, args.decode))
             for i, (s, ev) in enumerate(zip(states, ready_events, strict=True))]
    deadline = time.monotonic() + args.max_seconds
    # connected (or failed) everywhere -> READY
    while time.monotonic() < deadline:
        if all(s.connected or s.errors for s in states):
            break
        await asyncio.sleep(0.05)
    print(f"READY {sum(s.connected for s in states)} {sum(bool(s.errors) for s in states)}",
          flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    first = last = -1
    try:
        line = await asyncio.wait_for(reader.readline(), max(1.0, deadline - time.monotonic()))
        parts = line.decode().split()
        if len(parts) == 3 and parts[0] == "STOP":
            first, last = int(parts[1]), int(parts[2])
    except TimeoutError:
        pass
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    expected = last - first + 1 if last >= first >= 0 else 0
    per_consumer = []
    lat_all = []
    miss_counts = np.zeros(max(expected, 0), dtype=np.int64)  # per seq: consumers that missed it
    for s in states:
        seqs = np.frombuffer(s.seqs, dtype=np.int64) if len(s.seqs) else np.zeros(0, np.int64)
        lat = np.frombuffer(s.lat_us, dtype=np.int64) if len(s.lat_us) else np.zeros(0, np.int64)
        in_range = (seqs >= first) & (seqs <= last)
        unique = np.unique(seqs[in_range])
        missing = np.setdiff1d(np.arange(first, last + 1), unique) if expected else np.zeros(0, np.int64)
        if s.connected and expected:
            miss_counts[missing - first] += 1
        per_consumer.append({
            "connected": s.connected, "errors": s.errors[:3],
            "received": int(in_range.sum()), "unique": int(unique.size),
            "duplicates": int(in_range.sum() - unique.size),
            "lost": int(expected - unique.size),
            "out_of_order": int(np.count_nonzero(np.diff(seqs) <= 0)),
            "missing_sample": [int(x) for x in missing[:20]],
            "got_last": bool(expected and last in unique),
        })
        lat_all.append(lat[in_range])
    lat_ms = (np.concatenate(lat_all) / 1000.0).astype(np.float32) if lat_all else np.zeros(0, np.float32)
    np.save(args.out, lat_ms)
    nonzero = np.flatnonzero(miss_counts)
    print("RESULT " + json.dumps({"expected": expected, "consumers": per_consumer,
                                  "miss_counts": {int(first + i): int(miss_counts[i]) for i in nonzero}}),
          flush=True)


# ---------------------------------------------------------------- producer


async def _producer_main(args: argparse.Namespace) -> None:
    period = 1.0 / args.rate
    n_frames = round(args.duration * args.rate)
    values = DEFAULTS.copy()
    yaw = REGISTRY.index("h_yaw")
    jaw = REGISTRY.index("m_jaw")
    lateness: list[float] = []
    sent = 0
    async with contextlib.AsyncExitStack() as stack:
        if args.clients == "posewire":
            from posewire.producers.publisher import Publisher

            pub = await stack.enter_async_context(Publisher(
                args.url.rstrip("/"), args.stream, token=args.token, client="bench-producer",
                calibration=wire.Calibration(0.19, 0.50, 0.56, 0.36), reconnect=False))

            async def send(frame: wire.Frame) -> None:
                await pub.send_frame(frame.values, timestamp_us=frame.timestamp_us)
        else:
            ws = await stack.enter_async_context(_connect(args.url))
            await _handshake(ws, "producer", args.stream, args.token, "bench-producer")
            await ws.send(wire.encode(wire.Calibration(0.19, 0.50, 0.56, 0.36)))

            async def send(frame: wire.Frame) -> None:
                await ws.send(wire.encode(frame))
        t0 = time.monotonic() + 0.05
        cpu0 = time.process_time()
        failure = ""
        try:
            for seq in range(n_frames):
                due = t0 + seq * period
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                lateness.append(max(0.0, time.monotonic() - due))
                values[yaw] = 0.3 * math.sin(seq / 30.0)
                values[jaw] = 0.5 + 0.5 * math.sin(seq / 7.0)
                await send(wire.Frame(seq, time.time_ns() // 1000, values))
                sent += 1
        except Exception as exc:  # the relay closed the producer: reported, the level goes on
            failure = f"producer: {type(exc).__name__}: {exc}"[:300]
        elapsed = time.monotonic() - t0
        cpu_s = time.process_time() - cpu0
        if args.clients != "posewire":
            with contextlib.suppress(Exception):
                await ws.send(wire.encode(wire.Bye("benchmark done")))
    late = sorted(lateness)
    print("RESULT " + json.dumps({
        "sent": sent, "first_seq": 0, "last_seq": sent - 1, "elapsed_s": elapsed,
        "rate_hz": sent / elapsed if elapsed > 0 else 0.0,
        "cpu_percent": 100.0 * cpu_s / elapsed if elapsed > 0 else 0.0,
        "send_lateness_p99_ms": 1000 * late[min(len(late) - 1, int(0.99 * len(late)))] if late else 0.0,
        "frame_bytes": len(wire.encode(wire.Frame(0, time.time_ns() // 1000, values))),
        "error": failure,
    }), flush=True)


# ---------------------------------------------------------------- relay process


async def _serve_main(args: argparse.Namespace) -> None:
    from posewire.relay import Relay

    # status line every 0.5 s on stderr: the orchestrator reads drops / rate_limited
    # every benchmark client comes from 127.0.0.1: the per-address admission caps (spec
    # §5.8) are opened so that all levels, up to 500 consumers, are admitted
    # RELAY_BENCH_WINDOW_S: the send window's time bound (spec §5.7 rule 4; "none": frames only)
    window_s = os.environ.get("RELAY_BENCH_WINDOW_S", "0.25")
    relay = Relay("127.0.0.1", args.port, token=args.token or None, status_every=0.5, max_connections=4096,
                  max_per_address=4096, hello_rate=1000.0, hello_burst=10_000,
                  send_window_s=None if window_s == "none" else float(window_s))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.call_later(args.max_seconds, stop.set)  # bounded
    profile = None
    if os.environ.get("RELAY_BENCH_PROFILE"):  # where the relay's time goes: cProfile stats
        import cProfile

        profile = cProfile.Profile()  # (relay.run stops on SIGTERM: the stats are written)
        profile.enable()
    try:
        await relay.run(stop=stop)
    finally:
        if profile is not None:
            profile.disable()
            profile.dump_stats(os.environ["RELAY_BENCH_PROFILE"])


async def _serve_minimal_main(args: argparse.Namespace) -> None:
    """The peer: a minimal relay on ``websockets.broadcast()`` — hello/welcome and the
    token, then every producer message to every consumer of its stream, as it is. No
    validation, no state, no latest-wins, no send window, websockets' default keepalive
    (20 s). It prints status lines in the posewire relay's format (``frames_in``,
    ``frames_out``) so that the same orchestrator measures it."""
    from websockets.asyncio.server import ServerConnection, broadcast, serve
    from websockets.typing import Subprotocol

    token = args.token or None
    streams: dict[str, set[ServerConnection]] = {}
    counts = {"frames_in": 0, "frames_out": 0}

    async def handler(ws: ServerConnection) -> None:
        try:
            hello = wire.decode(await ws.recv())
        except Exception:
            await ws.close(4001, "no hello")
            return
        if not isinstance(hello, wire.Hello) or (token is not None and hello.token != token):
            await ws.close(4012, "refused")
            return
        await ws.send(wire.encode(wire.Welcome(f"m{id(ws):x}")))
        consumers = streams.setdefault(hello.stream, set())
        if hello.role == "consumer":
            consumers.add(ws)
            try:
                await ws.wait_closed()
            finally:
                consumers.discard(ws)
            return
        async for data in ws:
            if isinstance(data, bytes) and data[1:5] == b"\xa1t\xa1f":
                counts["frames_in"] += 1
                counts["frames_out"] += len(consumers)
            broadcast(consumers, data)

    async def status() -> None:
        while True:
            await asyncio.sleep(0.5)
            print(f"posewire relay: streams={len(streams)} frames_in={counts['frames_in']} "
                  f"frames_out={counts['frames_out']} drops=0 rate_limited=0 errors=0",
                  file=sys.stderr, flush=True)

    async with serve(handler, "127.0.0.1", args.port, subprotocols=[Subprotocol(wire.SUBPROTOCOL)],
                     compression=None, max_size=wire.DEFAULT_MAX_MESSAGE_BYTES, backlog=4096):
        task = asyncio.create_task(status())
        await asyncio.sleep(args.max_seconds)  # bounded
        task.cancel()


# ---------------------------------------------------------------- orchestrator


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"relay exited with {proc.returncode} before listening")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"relay did not listen on 127.0.0.1:{port} within {timeout} s")


def start_relay(relay_cmd: str, token: str, log: IO[bytes]) -> tuple[subprocess.Popen[bytes], int]:
    """Start the relay process on a free loopback port; return it and the port."""
    port = _free_port()
    cmd = shlex.split(relay_cmd.format(python=shlex.quote(sys.executable), port=port,
                                       token=shlex.quote(token), bench=shlex.quote(str(HERE))))
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        _wait_port(port, proc, 20.0)
    except Exception:
        _stop(proc)
        raise
    return proc, port


def _stop(proc: subprocess.Popen[Any], timeout: float = 5.0) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)


def _relay_counters(log_path: Path | None) -> dict[str, int]:
    """Counters of the relay's last status line (``key=value`` pairs), or {}."""
    if log_path is None or not log_path.exists():
        return {}
    last = ""
    with open(log_path, "rb") as f:
        f.seek(max(0, log_path.stat().st_size - 4096))
        for raw in f.read().decode(errors="replace").splitlines():
            if raw.startswith("posewire relay:"):
                last = raw
    out: dict[str, int] = {}
    for part in last.split()[2:]:
        key, _, value = part.partition("=")
        if value.isdigit():
            out[key] = int(value)
    return out


def _wait_drained(relay_log: Path | None, before: dict[str, int], sent: int, timeout: float) -> float:
    """Seconds until the relay has taken in every frame the producer sent (its
    ``frames_in`` + ``rate_limited`` counters), polled from its status lines; NaN when
    the relay reports no counters or did not drain within ``timeout``."""
    if not _relay_counters(relay_log):
        return float("nan")
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        now = _relay_counters(relay_log)
        taken = sum(now.get(k, 0) - before.get(k, 0) for k in ("frames_in", "rate_limited"))
        if taken >= sent:
            return time.monotonic() - t0
        time.sleep(0.1)
    return float("nan")


def _cpu_s(proc: Any) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


def _stop_workers(workers: list[subprocess.Popen[str]], prod: dict[str, Any]) -> list[dict[str, Any]]:
    """Tell every consumer worker the producer's seq range, then collect their results."""
    for w in workers:
        assert w.stdin is not None
        w.stdin.write(f"STOP {prod['first_seq']} {prod['last_seq']}\n")
        w.stdin.flush()
    results: list[dict[str, Any]] = []
    for w in workers:
        results.append(json.loads(_read_tagged(w, "RESULT", time.monotonic() + 60)))
        w.wait(30)
    return results


def _child(args: list[str], *, stdin: bool = False) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(HERE), *args], text=True,
                            stdout=subprocess.PIPE, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL)


def _read_tagged(proc: subprocess.Popen[str], tag: str, deadline: float) -> str:
    """Next stdout line of ``proc`` starting with ``tag`` (blocking, bounded by the
    child's own deadline: every child exits by itself)."""
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"child exited without {tag} (rc={proc.poll()})")
        if line.startswith(tag):
            return line[len(tag):].strip()
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {tag} line in time")


@dataclass
class LevelResult:
    """Figures of one fan-out level (latencies in ms, memory in MB)."""

    consumers: int
    workers: int
    decode: str
    clients: str
    connected: int
    connect_failures: int
    duration_s: float
    frames_sent: int
    producer_rate_hz: float
    producer_send_lateness_p99_ms: float
    frame_bytes: int
    expected_per_consumer: int
    received_min: int
    got_last_frame: int
    received_median: float
    frames_lost_total: int
    frames_missed_by_all: int
    consumers_with_loss: int
    max_lost_one_consumer: int
    duplicates: int
    out_of_order: int
    latency_samples: int
    latency_p50_ms: float
    latency_p99_ms: float
    latency_p999_ms: float
    latency_max_ms: float
    relay_cpu_percent: float
    relay_cpu_peak_percent: float
    relay_cpu_us_per_delivered_frame: float
    machine_cpu_percent: float
    consumers_cpu_percent: float
    producer_cpu_percent: float
    load_average_1min: float
    relay_rss_start_mb: float
    relay_rss_peak_mb: float
    relay_rss_end_mb: float
    relay_counters: dict[str, int]
    relay_input_drain_s: float
    errors: list[str]


def run_level(port: int, relay_pid: int, consumers: int, *, duration: float, token: str | None,
              rate: float = 60.0, decode: str = "full", clients: str = "raw", tag: str = "",
              relay_log: Path | None = None, grace_s: float = GRACE_S,
              drain_timeout_s: float = 30.0) -> LevelResult:
    """One fan-out level against a running relay; see the module docstring."""
    import psutil

    relay = psutil.Process(relay_pid)
    url = _url(port)
    stream = f"bench{tag}-{consumers}-{os.getpid()}"
    n_workers = max(1, math.ceil(consumers / CONSUMERS_PER_WORKER))
    shares = [consumers // n_workers + (1 if i < consumers % n_workers else 0) for i in range(n_workers)]
    rss_start = relay.memory_info().rss / 2**20
    max_seconds = duration + 120.0
    tmpdir = Path(tempfile.mkdtemp(prefix="relay-bench-"))
    tok = ["--token", token] if token is not None else []
    workers: list[subprocess.Popen[str]] = []
    lat_files: list[Path] = []
    errors: list[str] = []
    producer: subprocess.Popen[str] | None = None
    try:
        first_index = 0
        for i, share in enumerate(shares):
            lat_files.append(tmpdir / f"lat{i}.npy")
            workers.append(_child(["--worker", "--url", url, "--stream", stream, *tok,
                                   "--consumers", str(share), "--first-index", str(first_index),
                                   "--max-seconds", str(max_seconds), "--decode", decode, "--clients", clients,
                                   "--out", str(lat_files[-1])], stdin=True))
            first_index += share
        connected = failed = 0
        for w in workers:
            ok, bad = _read_tagged(w, "READY", time.monotonic() + max_seconds).split()
            connected += int(ok)
            failed += int(bad)
        time.sleep(0.6)  # let the relay settle after the connection burst (and log a status)
        counters_before = _relay_counters(relay_log)
        relay.cpu_percent(None)
        psutil.cpu_percent(None)
        cpu_before = relay.cpu_times()
        worker_procs = [psutil.Process(w.pid) for w in workers]
        workers_before = sum(_cpu_s(p) for p in worker_procs)
        t_start = time.monotonic()
        producer = _child(["--producer", "--url", url, "--stream", stream, *tok,
                           "--duration", str(duration), "--rate", str(rate), "--clients", clients])
        samples: list[float] = []
        rss_peak = rss_start
        while producer.poll() is None and time.monotonic() - t_start < max_seconds:
            time.sleep(1.0)
            samples.append(relay.cpu_percent(None))
            rss_peak = max(rss_peak, relay.memory_info().rss / 2**20)
        cpu_after = relay.cpu_times()
        wall = time.monotonic() - t_start
        machine_cpu = psutil.cpu_percent(None)
        load_1min = os.getloadavg()[0]
        workers_cpu = sum(_cpu_s(p) for p in worker_procs) - workers_before
        prod = json.loads(_read_tagged(producer, "RESULT", time.monotonic() + 10))
        # the relay may still hold unread producer frames (a backlog when it is short of
        # CPU): wait until it has taken them all in (bounded), then the grace
        drain_s = _wait_drained(relay_log, counters_before, prod["sent"], drain_timeout_s)
        time.sleep(grace_s)
        counters_after = _relay_counters(relay_log)
        results = _stop_workers(workers, prod)
        time.sleep(0.5)  # connections closed: memory after the level
        rss_end = relay.memory_info().rss / 2**20
    finally:
        for p in [*workers, *([producer] if producer else [])]:
            _stop(p)
    if prod.get("error"):
        errors.append(prod["error"])
    per = [c for r in results for c in r["consumers"]]
    for c in per:
        errors.extend(c["errors"])
    healthy = [c for c in per if c["connected"]]
    lat = np.concatenate([np.load(f) for f in lat_files if f.exists()]) if lat_files else np.zeros(0)
    for f in lat_files:
        f.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        tmpdir.rmdir()
    received = [c["unique"] for c in healthy] or [0]
    miss_total: dict[int, int] = {}
    for r in results:
        for seq, n in r["miss_counts"].items():
            miss_total[int(seq)] = miss_total.get(int(seq), 0) + n
    missed_by_all = sum(1 for n in miss_total.values() if healthy and n >= len(healthy))
    lost = [c["lost"] for c in healthy] or [0]
    cpu_s = (cpu_after.user + cpu_after.system) - (cpu_before.user + cpu_before.system)
    counters = {k: v - counters_before.get(k, 0) for k, v in counters_after.items()
                if k in ("frames_in", "frames_out", "drops", "rate_limited", "errors")}
    # relay counters are read after the grace; fall back to what consumers received
    frames_out = counters.get("frames_out") or int(lat.size)

    def pct(q: float) -> float:
        return float(np.percentile(lat, q)) if lat.size else float("nan")

    return LevelResult(
        consumers=consumers, workers=n_workers, decode=decode, clients=clients, connected=connected,
        connect_failures=failed, duration_s=duration, frames_sent=prod["sent"],
        producer_rate_hz=prod["rate_hz"], producer_send_lateness_p99_ms=prod["send_lateness_p99_ms"],
        frame_bytes=prod["frame_bytes"], expected_per_consumer=results[0]["expected"],
        received_min=min(received), got_last_frame=sum(1 for c in healthy if c["got_last"]),
        received_median=float(statistics.median(received)),
        frames_lost_total=sum(lost), frames_missed_by_all=missed_by_all,
        consumers_with_loss=sum(1 for x in lost if x > 0),
        max_lost_one_consumer=max(lost), duplicates=sum(c["duplicates"] for c in healthy),
        out_of_order=sum(c["out_of_order"] for c in healthy), latency_samples=int(lat.size),
        latency_p50_ms=pct(50), latency_p99_ms=pct(99), latency_p999_ms=pct(99.9),
        latency_max_ms=float(lat.max()) if lat.size else float("nan"),
        relay_cpu_percent=100.0 * cpu_s / wall if wall > 0 else float("nan"),
        relay_cpu_peak_percent=max(samples) if samples else float("nan"),
        relay_cpu_us_per_delivered_frame=(1e6 * cpu_s / frames_out) if frames_out else float("nan"),
        machine_cpu_percent=machine_cpu,
        consumers_cpu_percent=100.0 * workers_cpu / wall if wall > 0 else float("nan"),
        producer_cpu_percent=prod["cpu_percent"],
        load_average_1min=load_1min,
        relay_rss_start_mb=rss_start, relay_rss_peak_mb=rss_peak, relay_rss_end_mb=rss_end,
        relay_counters=counters, relay_input_drain_s=drain_s,
        errors=sorted(set(errors))[:10],
    )


def _table(levels: Sequence[LevelResult]) -> str:
    cpus = 100 * (os.cpu_count() or 1)
    lines = [
        "### Delivery and latency\n",
        "| consumers | connected | frames sent (Hz) | expected / consumer | received min / median | "
        "lost total (consumers with loss) | frames missed by every consumer | "
        "relay drops / rate-limited | relay input backlog at end s | latency p50 / p99 / p99.9 / max ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in levels:
        lines.append(
            f"| {r.consumers} | {r.connected} | {r.frames_sent} ({r.producer_rate_hz:.1f}) | "
            f"{r.expected_per_consumer} | {r.received_min} / {r.received_median:.0f} | "
            f"{r.frames_lost_total} ({r.consumers_with_loss}) | {r.frames_missed_by_all} | "
            f"{r.relay_counters.get('drops', '?')} / {r.relay_counters.get('rate_limited', '?')} | "
            f"{r.relay_input_drain_s:.1f} | {r.latency_p50_ms:.2f} / {r.latency_p99_ms:.2f} / "
            f"{r.latency_p999_ms:.2f} / {r.latency_max_ms:.1f} |")
    lines += [
        "\n### Resources\n",
        "| consumers | relay CPU % avg (peak) | relay CPU µs / delivered frame | "
        "relay RSS start → end MB (peak) | consumer procs (n) CPU % | producer CPU % | "
        "machine CPU % (load 1 min) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in levels:
        lines.append(
            f"| {r.consumers} | {r.relay_cpu_percent:.0f} ({r.relay_cpu_peak_percent:.0f}) | "
            f"{r.relay_cpu_us_per_delivered_frame:.1f} | "
            f"{r.relay_rss_start_mb:.1f} → {r.relay_rss_end_mb:.1f} ({r.relay_rss_peak_mb:.1f}) | "
            f"{r.consumers_cpu_percent:.0f} ({r.workers}) | {r.producer_cpu_percent:.0f} | "
            f"{r.machine_cpu_percent:.0f} of {cpus} ({r.load_average_1min:.1f}) |")
    return "\n".join(lines)


def run(consumer_levels: Sequence[int], *, duration: float, relay_cmd: str = DEFAULT_RELAY_CMD,
        token: str | None = "bench-token", decode: str = "full", clients: str = "raw",
        rate: float = 60.0,
        relay_log: Path | None = None, grace_s: float = GRACE_S, relay_nice: int = 0,
        ) -> tuple[list[LevelResult], dict[str, float]]:
    """Start a relay, run every level against it, stop it. Returns the level results and
    the relay's RSS (MB) right after start and at the very end."""
    results, memory = compare(consumer_levels, duration=duration, relays={"relay": relay_cmd},
                              token=token, decode=decode, clients=clients, rate=rate,
                              relay_logs={"relay": relay_log} if relay_log else None,
                              grace_s=grace_s, relay_nice=relay_nice)
    return results["relay"], memory["relay"]


def compare(consumer_levels: Sequence[int], *, duration: float,
            relays: dict[str, str] | None = None, repeat: int = 1,
            token: str | None = "bench-token", decode: str = "full", clients: str = "raw",
            rate: float = 60.0, relay_logs: dict[str, Path] | None = None,
            grace_s: float = GRACE_S, relay_nice: int = 0,
            ) -> tuple[dict[str, list[LevelResult]], dict[str, dict[str, float]]]:
    """Start every relay of ``relays`` (name → command template; default
    :data:`RELAYS`: ``posewire serve`` and the minimal ``broadcast()`` relay) side by
    side, then run each level against each relay back to back, ``repeat`` times; the
    order of the relays alternates from one level (and repeat) to the next, so that
    neither always runs first on a machine whose load drifts. Returns, per relay, its
    level results in run order, and its RSS (MB) after start and at the end."""
    import psutil

    relays = dict(RELAYS if relays is None else relays)
    names = list(relays)
    results: dict[str, list[LevelResult]] = {n: [] for n in names}
    memory: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="relay-bench-log-") as tmp, \
            contextlib.ExitStack() as stack:
        started: dict[str, tuple[subprocess.Popen[bytes], int, Path]] = {}
        try:
            for name, cmd in relays.items():
                log_path = (relay_logs or {}).get(name) or Path(tmp) / f"{name}.log"
                log = stack.enter_context(open(log_path, "wb"))
                proc, port = start_relay(cmd, token or "", log)
                started[name] = (proc, port, log_path)
                ps = psutil.Process(proc.pid)
                if relay_nice:
                    ps.nice(relay_nice)  # a negative value needs privileges
                memory[name] = {"rss_after_start_mb": ps.memory_info().rss / 2**20}
            turn = 0
            for _ in range(repeat):
                for level in consumer_levels:
                    order = names if turn % 2 == 0 else names[::-1]
                    turn += 1
                    for name in order:
                        proc, port, log_path = started[name]
                        results[name].append(run_level(
                            port, proc.pid, level, duration=duration, token=token, rate=rate,
                            decode=decode, clients=clients, relay_log=log_path, grace_s=grace_s,
                            tag=f"-{name}-{turn}"))
            for name, (proc, _, _) in started.items():
                memory[name]["rss_at_end_mb"] = psutil.Process(proc.pid).memory_info().rss / 2**20
        finally:
            for proc, _, _ in started.values():
                _stop(proc)
    return results, memory


def _ratio(a: float, b: float) -> float:
    return a / b if b and math.isfinite(a) and math.isfinite(b) else float("nan")


def comparison_rows(results: dict[str, list[LevelResult]], subject: str = "posewire",
                    peer: str = "minimal") -> list[dict[str, Any]]:
    """Per run of a level, ``subject`` beside ``peer`` (the same level, back to back):
    CPU µs per delivered frame, loss, p50/p99 latency and the ratios subject / peer."""
    rows = []
    for s, p in zip(results[subject], results[peer], strict=True):
        rows.append({
            "consumers": s.consumers,
            "cpu_us": (s.relay_cpu_us_per_delivered_frame, p.relay_cpu_us_per_delivered_frame),
            "cpu_ratio": _ratio(s.relay_cpu_us_per_delivered_frame, p.relay_cpu_us_per_delivered_frame),
            "lost": (s.frames_lost_total, p.frames_lost_total),
            "p50_ms": (s.latency_p50_ms, p.latency_p50_ms),
            "p99_ms": (s.latency_p99_ms, p.latency_p99_ms),
            "p99_ratio": _ratio(s.latency_p99_ms, p.latency_p99_ms),
            "load_1min": (s.load_average_1min, p.load_average_1min),
        })
    return rows


def _comparison_table(rows: list[dict[str, Any]], subject: str, peer: str) -> str:
    lines = [
        f"### {subject} beside {peer} (same run, back to back)\n",
        f"| consumers | CPU µs / delivered frame {subject} / {peer} | ratio | lost {subject} / {peer} | "
        f"p50 ms {subject} / {peer} | p99 ms {subject} / {peer} | p99 ratio | load 1 min |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['consumers']} | {r['cpu_us'][0]:.1f} / {r['cpu_us'][1]:.1f} | {r['cpu_ratio']:.2f} | "
            f"{r['lost'][0]} / {r['lost'][1]} | {r['p50_ms'][0]:.2f} / {r['p50_ms'][1]:.2f} | "
            f"{r['p99_ms'][0]:.1f} / {r['p99_ms'][1]:.1f} | {r['p99_ratio']:.2f} | "
            f"{r['load_1min'][0]:.1f} / {r['load_1min'][1]:.1f} |")
    by_level: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        by_level.setdefault(r["consumers"], []).append(r)
    if any(len(v) > 1 for v in by_level.values()):
        lines += ["", "| consumers | runs | CPU ratio min / median / max | p99 ratio median |",
                  "|---:|---:|---:|---:|"]
        for level, rs in by_level.items():
            cpu = sorted(r["cpu_ratio"] for r in rs)
            lines.append(f"| {level} | {len(rs)} | {cpu[0]:.2f} / {statistics.median(cpu):.2f} / "
                         f"{cpu[-1]:.2f} | {statistics.median(r['p99_ratio'] for r in rs):.2f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--consumers", type=int, nargs="+", default=[10, 100, 300])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of producing per level")
    parser.add_argument("--rate", type=float, default=60.0, help="producer frames per second")
    parser.add_argument("--decode", choices=("full", "light"), default="full",
                        help="raw consumers run posewire.codec.wire.decode (full) or read only seq/timestamp (light)")
    parser.add_argument("--clients", choices=("raw", "posewire"), default="raw",
                        help="raw websockets + posewire.codec.wire (default), or the real posewire.producers.publisher."
                             "Publisher / posewire.consumers.subscriber.Subscriber")
    parser.add_argument("--token", default="bench-token", help="auth token for the relay")
    parser.add_argument("--relays", nargs="+", choices=sorted(RELAYS), default=list(RELAYS),
                        help="relays run side by side, each level back to back (default: posewire serve and "
                             "the minimal websockets.broadcast() relay)")
    parser.add_argument("--relay", action="append", default=[], metavar="NAME=CMD",
                        help="one more relay to run beside --relays (e.g. an earlier build: "
                             "'before=env PYTHONPATH=/tmp/old {python} {bench} --serve --port {port} --token {token}')")
    parser.add_argument("--repeat", type=int, default=1, help="runs of every level per relay (interleaved)")
    parser.add_argument("--relay-cmd", help="run only this relay command instead of --relays; "
                                            "{python}, {port}, {token} are filled in")
    parser.add_argument("--relay-nice", type=int, default=0,
                        help="nice value for the relay processes (e.g. -5: let them win the CPU from "
                             "the consumer processes on a small machine; needs privileges)")
    parser.add_argument("--relay-log", type=Path, help="write the (first) relay's output here")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    # internal roles
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--producer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-minimal", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--stream", help=argparse.SUPPRESS)
    parser.add_argument("--first-index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--max-seconds", type=float, default=3600.0, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        args.consumers = args.consumers[0]
        args.token = args.token or None
        asyncio.run(_worker_main(args))
        return 0
    if args.serve:
        asyncio.run(_serve_main(args))
        return 0
    if args.serve_minimal:
        asyncio.run(_serve_minimal_main(args))
        return 0
    if args.producer:
        args.token = args.token or None
        asyncio.run(asyncio.wait_for(_producer_main(args), args.duration + 60))
        return 0

    relays = ({"relay": args.relay_cmd} if args.relay_cmd
              else {name: RELAYS[name] for name in dict.fromkeys(args.relays)})
    for spec in args.relay:
        name, _, cmd = spec.partition("=")
        if not name or not cmd or name in relays:
            parser.error(f"--relay {spec!r}: NAME=CMD with a new name")
        relays[name] = cmd
    first = next(iter(relays))
    results, memory = compare(args.consumers, duration=args.duration, relays=relays, repeat=args.repeat,
                              token=args.token or None, decode=args.decode, clients=args.clients,
                              rate=args.rate, relay_nice=args.relay_nice,
                              relay_logs={first: args.relay_log} if args.relay_log else None)
    import psutil

    print("## posewire relay fan-out benchmark\n")
    print(f"loopback 127.0.0.1, {os.cpu_count()} logical CPUs "
          f"({psutil.cpu_count(logical=False)} physical), producer {args.rate:g} Hz, "
          f"{args.duration:g} s per level, clients = {args.clients}"
          + (f", consumers decode = {args.decode}" if args.clients == "raw" else "")
          + f", relays: {', '.join(relays)} (levels back to back, order alternating)\n")
    for name, levels in results.items():
        if len(results) > 1:
            print(f"## relay: {name}\n")
        print(_table(levels))
        print(f"\nrelay RSS: {memory[name]['rss_after_start_mb']:.1f} MB after start, "
              f"{memory[name]['rss_at_end_mb']:.1f} MB at the end of all levels\n")
        for r in levels:
            if r.errors:
                print(f"errors at {r.consumers} consumers: {r.errors}\n")
    if args.relay_nice:
        print(f"relays ran at nice {args.relay_nice}\n")
    comparisons = {name: comparison_rows(results, name, "minimal") for name in results
                   if name != "minimal" and "minimal" in results}
    for name, rows in comparisons.items():
        print(_comparison_table(rows, name, "minimal") + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "generated_unix": time.time(), "cpus": os.cpu_count(), "rate_hz": args.rate,
            "duration_s": args.duration, "decode": args.decode, "clients": args.clients,
            "relay_nice": args.relay_nice, "repeat": args.repeat,
            "memory": memory,
            "relays": {name: [asdict(r) for r in levels] for name, levels in results.items()},
            # the first relay's levels, as before the peer was added
            "levels": [asdict(r) for r in results[first]],
            "comparison": comparisons.get("posewire", []),
            "comparisons": comparisons}, indent=2) + "\n")
    return 0


def self_signed(folder: Path, *, days: float = 30.0, expired: bool = False,
                san: bool = True, cn: str = "posewire test relay") -> tuple[Path, Path]:
    """A self-signed certificate (and key) for localhost / 127.0.0.1 in ``folder``
    (``cert.pem``, ``key.pem``): valid for ``days`` from now (``expired``: it ended a day
    ago); ``san=False``: no subjectAltName, the host only in the subject's CN. Shared by the
    TLS benchmarks and tests (needs ``cryptography``, a dev dependency)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = datetime.datetime.now(datetime.UTC)
    start = now - datetime.timedelta(days=10 if expired else 0, minutes=5)
    end = now - datetime.timedelta(days=1) if expired else now + datetime.timedelta(days=days)
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(start).not_valid_after(end)
               .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True))
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False)
    cert = builder.sign(key, hashes.SHA256())
    folder.mkdir(parents=True, exist_ok=True)
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file

if __name__ == "__main__":
    sys.exit(main())
