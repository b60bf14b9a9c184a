"""Relay cluster benchmark: 1 producer → 3 relays sharing the stream over NATS → N consumers each,
beside one relay serving the same total.

Run: ``.venv/bin/python benchmarks/cluster_bench.py [--consumers 100] [--duration 30]
[--json PATH]`` (``--consumers`` is per relay: 100 → 300 in all).

1. starts ``nats-server -js`` on 127.0.0.1, a free port and a temporary store;
2. **cluster**: starts three ``posewire serve --broker nats://…`` processes (A, B, C);
   C consumers connect to each (the worker processes of ``relay_bench.py``: raw
   websockets + :func:`posewire.codec.wire.decode`); one producer sends full frames at
   60 Hz to relay A for ``--duration`` seconds. Every consumer records the latency
   ``now − timestamp_us`` (one host clock) and the sequence numbers it got;
3. **single**: the same total (3·C consumers) on one ``posewire serve`` without a broker;
4. prints, per setup: frames lost, p50/p99/p99.9 latency, and CPU: each relay process,
   the NATS server, and their sum per delivered frame, with the broker's share.

Every process is on this one machine: the consumers, producer, relays and NATS server
compete for the same cores (the report states how many), so the cluster is measured
for its overhead and correctness on loopback, not for the capacity it adds on several
machines.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["NatsServer", "RelayProcess", "SetupResult", "main", "nats_server_binary", "run_setup"]

HERE = Path(__file__).resolve()
_URL_RE = re.compile(r"posewire relay on (ws://\S+)")
if str(HERE.parent) not in sys.path:  # loaded by the tests: the scripts beside this one
    sys.path.insert(0, str(HERE.parent))
import relay_bench  # noqa: E402  (its consumer workers and producer)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def nats_server_binary() -> str | None:
    """The ``nats-server`` executable (Debian installs it in /usr/sbin), or None."""
    return shutil.which("nats-server") or shutil.which("nats-server", path="/usr/sbin:/usr/local/sbin")


class NatsServer:
    """A ``nats-server -js`` on 127.0.0.1 with its own store directory; :meth:`stop`
    and :meth:`start` again keep the port and the store (a restart)."""

    def __init__(self, store: Path, *, port: int | None = None, config: str | None = None,
                 scheme: str = "nats", env: dict[str, str] | None = None) -> None:
        binary = nats_server_binary()
        if binary is None:
            raise RuntimeError("nats-server is not installed (Debian: apt-get install nats-server)")
        self.binary = binary
        self.store = store
        self.port = port or _free_port()
        #: a configuration file's text (accounts, permissions, TLS: docs/cluster.md)
        self.config = config
        self.scheme = scheme
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def start(self, timeout: float = 10.0) -> NatsServer:
        cmd = [self.binary, "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", str(self.store)]
        if self.config is not None:
            self.store.mkdir(parents=True, exist_ok=True)
            conf = self.store.parent / f"{self.store.name}.conf"
            conf.write_text(self.config)
            cmd += ["-c", str(conf)]
        self.proc = subprocess.Popen(
            cmd, env=None if self.env is None else {**os.environ, **self.env},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nats-server exited with {self.proc.returncode}")
            with socket.socket() as s:
                s.settimeout(0.2)
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"nats-server did not listen on {self.port} within {timeout} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def __enter__(self) -> NatsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class RelayProcess:
    """A relay in a process of its own on a free loopback port (``broker``: with a
    broker); :attr:`url` is read from its start-up line. ``bench=False``: ``posewire serve``
    as a user runs it; ``bench=True``: :func:`_serve_main`, the same relay with admission
    limits opened for hundreds of loopback clients from one address and no keepalive."""

    def __init__(self, *, broker: str | None = None, token: str | None = None,
                 log: Path | None = None, status_every: float = 0.5, bench: bool = False) -> None:
        if bench:
            cmd = [sys.executable, str(HERE), "--serve"]
        else:
            cmd = [sys.executable, "-m", "posewire.cli", "serve", "--port", "0",
                   "--status-every", str(status_every)]
        if broker:
            cmd += ["--broker", broker]
        if token:
            cmd += ["--token", token]
        self.log_path = log or Path(tempfile.mkstemp(prefix="posewire-relay-", suffix=".log")[1])
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        self.url = ""

    def wait_ready(self, timeout: float = 30.0) -> RelayProcess:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = _URL_RE.search(self.log_path.read_text(errors="replace"))
            if match:
                self.url = match.group(1)
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        text = self.log_path.read_text(errors="replace")[-2000:]
        self.stop()
        raise RuntimeError(f"relay did not start (rc={self.proc.returncode}): {text}")

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def kill(self) -> None:
        """SIGKILL: the relay dies without a bye."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()



def start_relays(n: int, *, broker: str | None, token: str | None = None,
                 bench: bool = False) -> list[RelayProcess]:
    """Start ``n`` relay processes at once and wait until all listen."""
    relays = [RelayProcess(broker=broker, token=token, bench=bench) for _ in range(n)]
    try:
        for r in relays:
            r.wait_ready()
    except Exception:
        for r in relays:
            r.stop()
        raise
    return relays


# ---------------------------------------------------------------- the benchmark


async def _serve_main(broker: str | None, token: str | None) -> None:
    import logging

    from posewire.relay import Relay

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    # every benchmark client comes from 127.0.0.1: the per-address caps are opened; no
    # keepalive (on a starved machine a late pong would close a healthy client)
    relay = Relay("127.0.0.1", 0, token=token, status_every=0.5, max_connections=4096,
                  max_per_address=4096, hello_rate=1000.0, hello_burst=10_000,
                  ping_interval=None, ping_timeout=None,
                  broker=None if broker is None else _broker(broker))
    await relay.run()


def _broker(url: str) -> Any:
    from posewire.relay.cluster import Broker

    return Broker(url)


@dataclass
class SetupResult:
    """One setup's figures (latencies in ms, CPU in µs per delivered frame)."""

    setup: str
    relays: int
    consumers: int
    connected: int
    frames_sent: int
    expected_per_consumer: int
    frames_lost_total: int
    consumers_with_loss: int
    out_of_order: int
    latency_p50_ms: float
    latency_p99_ms: float
    latency_p999_ms: float
    latency_max_ms: float
    delivered: int
    relay_cpu_s: list[float]
    broker_cpu_s: float
    cpu_us_per_delivered: float
    broker_share: float
    consumers_cpu_percent: float
    machine_cpu_percent: float
    load_average_1min: float
    errors: list[str]


def run_setup(setup: str, urls: Sequence[str], relay_pids: Sequence[int], per_relay: int, *,
              duration: float, rate: float, token: str | None, broker_pid: int | None,
              producer_url: str) -> SetupResult:
    """Consumers on each of ``urls`` (``per_relay`` each), one producer on
    ``producer_url``; CPU of the relays and the broker over the producing interval."""
    import psutil

    rb = relay_bench
    stream = f"cluster-{len(relay_pids)}-{os.getpid()}"
    tok = ["--token", token] if token else []
    max_seconds = duration + 120.0
    tmp = Path(tempfile.mkdtemp(prefix="cluster-bench-"))
    workers: list[subprocess.Popen[str]] = []
    lat_files: list[Path] = []
    producer: subprocess.Popen[str] | None = None
    try:
        index = 0
        for url in urls:
            n_workers = max(1, math.ceil(per_relay / rb.CONSUMERS_PER_WORKER))
            shares = [per_relay // n_workers + (1 if i < per_relay % n_workers else 0) for i in range(n_workers)]
            for share in shares:
                lat_files.append(tmp / f"lat{len(lat_files)}.npy")
                workers.append(rb._child(["--worker", "--url", url + "/", "--stream", stream, *tok,
                                          "--consumers", str(share), "--first-index", str(index),
                                          "--max-seconds", str(max_seconds), "--decode", "full",
                                          "--clients", "raw", "--out", str(lat_files[-1])], stdin=True))
                index += share
        connected = 0
        for w in workers:
            ok, _bad = rb._read_tagged(w, "READY", time.monotonic() + max_seconds).split()
            connected += int(ok)
        time.sleep(1.0)  # let the relays settle after the connection burst
        relays = [psutil.Process(p) for p in relay_pids]
        broker = psutil.Process(broker_pid) if broker_pid else None
        worker_procs = [psutil.Process(w.pid) for w in workers]
        relay_before = [rb._cpu_s(p) for p in relays]
        broker_before = rb._cpu_s(broker) if broker else 0.0
        workers_before = sum(rb._cpu_s(p) for p in worker_procs)
        psutil.cpu_percent(None)
        t0 = time.monotonic()
        producer = rb._child(["--producer", "--url", producer_url + "/", "--stream", stream, *tok,
                              "--duration", str(duration), "--rate", str(rate), "--clients", "raw"])
        prod = json.loads(rb._read_tagged(producer, "RESULT", time.monotonic() + max_seconds))
        time.sleep(rb.GRACE_S)
        wall = time.monotonic() - t0
        relay_cpu = [rb._cpu_s(p) - b for p, b in zip(relays, relay_before, strict=True)]
        broker_cpu = (rb._cpu_s(broker) - broker_before) if broker else 0.0
        workers_cpu = sum(rb._cpu_s(p) for p in worker_procs) - workers_before
        machine_cpu = psutil.cpu_percent(None)
        load = os.getloadavg()[0]
        results = rb._stop_workers(workers, prod)
    finally:
        for p in [*workers, *([producer] if producer else [])]:
            rb._stop(p)
    per = [c for r in results for c in r["consumers"]]
    healthy = [c for c in per if c["connected"]]
    errors = sorted({e for c in per for e in c["errors"]})[:10]
    lat = np.concatenate([np.load(f) for f in lat_files if f.exists()]) if lat_files else np.zeros(0)
    shutil.rmtree(tmp, ignore_errors=True)
    lost = [c["lost"] for c in healthy] or [0]
    delivered = int(lat.size)
    total_cpu = sum(relay_cpu) + broker_cpu

    def pct(q: float) -> float:
        return float(np.percentile(lat, q)) if lat.size else float("nan")

    return SetupResult(
        setup=setup, relays=len(relay_pids), consumers=per_relay * len(urls), connected=connected,
        frames_sent=prod["sent"], expected_per_consumer=results[0]["expected"],
        frames_lost_total=sum(lost), consumers_with_loss=sum(1 for x in lost if x > 0),
        out_of_order=sum(c["out_of_order"] for c in healthy),
        latency_p50_ms=pct(50), latency_p99_ms=pct(99), latency_p999_ms=pct(99.9),
        latency_max_ms=float(lat.max()) if lat.size else float("nan"),
        delivered=delivered, relay_cpu_s=relay_cpu, broker_cpu_s=broker_cpu,
        cpu_us_per_delivered=1e6 * total_cpu / delivered if delivered else float("nan"),
        broker_share=broker_cpu / total_cpu if total_cpu > 0 else float("nan"),
        consumers_cpu_percent=100.0 * workers_cpu / wall, machine_cpu_percent=machine_cpu,
        load_average_1min=load, errors=errors)


def _table(results: Sequence[SetupResult]) -> str:
    lines = [
        "| setup | consumers (connected) | frames sent | lost total (consumers with loss) | out of order | "
        "latency p50 / p99 / p99.9 / max ms | CPU s: relays | CPU s: NATS | "
        "CPU µs / delivered frame (NATS share) | consumer procs CPU % | machine CPU % (load) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        relays = " + ".join(f"{c:.1f}" for c in r.relay_cpu_s)
        lines.append(
            f"| {r.setup} | {r.consumers} ({r.connected}) | {r.frames_sent} | "
            f"{r.frames_lost_total} ({r.consumers_with_loss}) | {r.out_of_order} | "
            f"{r.latency_p50_ms:.2f} / {r.latency_p99_ms:.2f} / {r.latency_p999_ms:.2f} / "
            f"{r.latency_max_ms:.1f} | {relays} | {r.broker_cpu_s:.2f} | "
            f"{r.cpu_us_per_delivered:.1f} ({100 * r.broker_share:.1f} %) | "
            f"{r.consumers_cpu_percent:.0f} | {r.machine_cpu_percent:.0f} ({r.load_average_1min:.1f}) |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--consumers", type=int, default=100, help="consumers per relay (3 relays)")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of producing per setup")
    parser.add_argument("--rate", type=float, default=60.0, help="producer frames per second")
    parser.add_argument("--token", default="bench-token")
    parser.add_argument("--skip-single", action="store_true", help="only the cluster")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--broker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        import asyncio

        asyncio.run(_serve_main(args.broker, args.token or None))
        return 0
    import psutil

    results: list[SetupResult] = []
    with tempfile.TemporaryDirectory(prefix="cluster-bench-nats-") as store, \
            NatsServer(Path(store)) as nats:
        relays = start_relays(3, broker=nats.url, token=args.token, bench=True)
        try:
            assert nats.proc is not None
            results.append(run_setup(
                "3 relays + NATS", [r.url for r in relays], [r.proc.pid for r in relays],
                args.consumers, duration=args.duration, rate=args.rate, token=args.token,
                broker_pid=nats.proc.pid, producer_url=relays[0].url))
        finally:
            for r in relays:
                r.stop()
    if not args.skip_single:
        (single,) = start_relays(1, broker=None, token=args.token, bench=True)
        try:
            results.append(run_setup(
                "1 relay", [single.url], [single.proc.pid], 3 * args.consumers,
                duration=args.duration, rate=args.rate, token=args.token, broker_pid=None,
                producer_url=single.url))
        finally:
            single.stop()
    print("## posewire relay cluster benchmark\n")
    print(f"loopback 127.0.0.1, {os.cpu_count()} logical CPUs ({psutil.cpu_count(logical=False)} physical) "
          f"shared by every process here (relays, NATS, consumers, producer) and by other jobs; "
          f"producer {args.rate:g} Hz to relay A, {args.duration:g} s per setup, "
          f"{args.consumers} consumers on each cluster relay\n")
    print(_table(results))
    for r in results:
        if r.errors:
            print(f"\nerrors ({r.setup}): {r.errors}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "generated_unix": time.time(), "cpus": os.cpu_count(), "rate_hz": args.rate,
            "duration_s": args.duration, "results": [asdict(r) for r in results]}, indent=2) + "\n")
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
