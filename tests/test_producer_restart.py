"""A restarted producer is a new producer, never a blackout (spec §5.10, §5.7 rule 7).

A producer that restarts numbers its frames from 0 again, usually well within 1024 frames
of its predecessor's last number. A relay forwards one producer's frames in order only
(§5.7 rule 2), so a consumer reads a frame at or behind the newest on its link as a new
producer: delivered at once, marked ``reset``. These tests restart real producers
(:class:`~posewire.producers.publisher.Publisher`) under real consumers — the Python
:class:`~posewire.consumers.subscriber.Subscriber` and the JavaScript one in Node — after
a clean stop, a crash and a takeover, on one relay and on three relay processes of a
cluster, and measure the time from the new producer's first send to each consumer's
first frame of it: it must be within one frame interval.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from benchutil import load_benchmark
from netutil import open_raw, wait_for

from posewire.codec.registry import REGISTRY
from posewire.codec.vector import N_DIMS
from posewire.codec.wire import Frame, encode, registry_hash8
from posewire.consumers.smoothing import Interpolator
from posewire.consumers.subscriber import Subscriber
from posewire.producers.publisher import Publisher
from posewire.relay import Relay

ROOT = Path(__file__).resolve().parent.parent
JS_SUBSCRIBER = ROOT / "js" / "test" / "subscribe.mjs"
NODE = shutil.which("node")
cluster_bench = load_benchmark("cluster_bench")

RATE = 30.0  # frames/s of the producers: one frame interval is 33 ms
INTERVAL = 1 / RATE
H_YAW = REGISTRY.index("h_yaw")
M_JAW = REGISTRY.index("m_jaw")
#: where the first producer's numbers stand when it goes: 11 s of frames at 30 Hz, which
#: a consumer reading 338 → 0 as a reorder would sit out
OLD_LAST = 338


@dataclass
class Seen:
    """One consumer's frames: (local monotonic time, seq, reset, h_yaw)."""

    name: str
    frames: list[tuple[float, int, bool, float]] = field(default_factory=list)

    def first_after(self, t0: float, value: float) -> tuple[float, int, bool, float] | None:
        """Its first frame received after ``t0`` carrying ``h_yaw == value``."""
        return next((f for f in self.frames if f[0] >= t0 and abs(f[3] - value) < 1e-3), None)


class PySubscriber:
    def __init__(self, url: str, stream: str, name: str) -> None:
        self.sub = Subscriber(url, stream, merge=True, backoff_initial=0.02, backoff_max=0.2)
        self.seen = Seen(name)
        self.masks: list[tuple[int, bool, np.ndarray]] = []
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.sub.connect()

        async def read() -> None:
            async for f in self.sub:
                self.seen.frames.append((time.monotonic(), f.seq, f.reset, float(f.values[H_YAW])))
                self.masks.append((f.seq, f.reset, f.values.copy()))

        self._task = asyncio.create_task(read())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.sub.close()


class JsSubscriber:
    """js/posewire/client.mjs in Node, one JSON line per frame."""

    def __init__(self, url: str, stream: str, name: str) -> None:
        self.url, self.stream = url, stream
        self.seen = Seen(name)
        self.status: list[str] = []
        self.proc: asyncio.subprocess.Process | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        assert NODE is not None
        flags = [] if _node_has_websocket([]) else ["--experimental-websocket"]
        self.proc = await asyncio.create_subprocess_exec(
            NODE, *flags, str(JS_SUBSCRIBER), self.url, self.stream, REGISTRY.version,
            registry_hash8().hex(), stdin=subprocess.PIPE, stdout=subprocess.PIPE)

        async def read() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            async for line in self.proc.stdout:
                item = json.loads(line)
                if "status" in item:
                    self.status.append(item["status"])
                else:
                    yaw = item["hYaw"] if item["hYaw"] is not None else float("nan")
                    self.seen.frames.append((time.monotonic(), item["seq"], item["reset"], yaw))

        self._task = asyncio.create_task(read())
        await wait_for(lambda: any(s.startswith("subscribed") for s in self.status), timeout=10)

    async def close(self) -> None:
        if self.proc is not None:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)


def _node_has_websocket(flags: list[str]) -> bool:
    assert NODE is not None
    done = subprocess.run([NODE, *flags, "-e", "process.exit(typeof WebSocket === 'function' ? 0 : 1)"],
                          capture_output=True, timeout=30, check=False)
    return done.returncode == 0


def _node_websocket_available() -> bool:
    return NODE is not None and (_node_has_websocket([])
                                 or _node_has_websocket(["--experimental-websocket"]))


NEEDS_NODE = pytest.mark.skipif(not _node_websocket_available(),
                                reason="node with a WebSocket client is not installed")


async def _produce(pub: Publisher, frames: int, value: float, *, jaw: float | None = None
                   ) -> float:
    """Send ``frames`` frames at RATE with ``h_yaw = value``; the time of the first send."""
    dims = {"h_yaw": value} if jaw is None else {"h_yaw": value, "m_jaw": jaw}
    t0 = 0.0
    for i in range(frames):
        if i == 0:
            t0 = time.monotonic()
        await pub.send_frame(dims)
        await asyncio.sleep(INTERVAL)
    return t0


async def _first_producer(url: str, stream: str) -> Publisher:
    """A producer that has been running for a while: its numbers reach OLD_LAST."""
    pub = Publisher(url, stream, backoff_initial=0.02, backoff_max=0.2)
    await pub.connect()
    pub.seq = OLD_LAST - 9  # as if it had run 11 s at 30 Hz
    await _produce(pub, 10, 0.1, jaw=0.5)
    assert pub.seq == OLD_LAST + 1
    return pub


async def _new_producer(url: str, stream: str, value: float) -> tuple[Publisher, float]:
    pub = Publisher(url, stream, backoff_initial=0.02, backoff_max=0.2)
    async with asyncio.timeout(10):  # a relay may refuse it until the old lease is free
        await pub.connect()
    return pub, await _produce(pub, 10, value)


def _latencies(consumers: list[Seen], t0: float, value: float) -> dict[str, float]:
    """Each consumer's time from the new producer's first send to its first frame, which
    must be that producer's frame 0, marked reset."""
    out: dict[str, float] = {}
    for seen in consumers:
        first = seen.first_after(t0, value)
        assert first is not None, (seen.name, seen.frames[-5:])
        t, seq, reset, _ = first
        assert (seq, reset) == (0, True), (seen.name, first)
        out[seen.name] = t - t0
    return out


def _report(what: str, lat: dict[str, float]) -> None:
    print(f"{what}: first frame of the new producer after "
          + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in lat.items()))


# ---------------------------------------------------------------- one relay


@NEEDS_NODE
async def test_a_restarted_producer_reaches_python_and_js_consumers_within_one_frame_interval(
        ) -> None:
    stream = "restart.one"
    async with Relay("127.0.0.1", 0, ping_interval=0.3, ping_timeout=0.5) as relay:
        py = [PySubscriber(relay.url, stream, f"py{i}") for i in range(2)]
        js = JsSubscriber(relay.url, stream, "js")
        for c in [*py, js]:
            await c.start()
        consumers = [*(c.seen for c in py), js.seen]
        try:
            first = await _first_producer(relay.url, stream)
            await wait_for(lambda: all(s.frames and s.frames[-1][1] == OLD_LAST for s in consumers))

            # a clean stop (bye), then the producer again from 0
            await first.close()
            second, t0 = await _new_producer(relay.url, stream, 0.2)
            lat = _latencies(consumers, t0, 0.2)
            _report("clean stop", lat)
            assert max(lat.values()) < INTERVAL, lat
            # what came next is in order, and the merged state is the new producer's only
            for c in py:
                after = [s for t, s, _, _ in c.seen.frames if t >= t0]
                assert after == sorted(after) and after[0] == 0 and after[-1] == 9
                seq, _, values = next(m for m in c.masks if m[1])
                assert seq == 0 and np.isnan(values[M_JAW]) and values[H_YAW] == pytest.approx(0.2, abs=1e-3)
                assert c.sub.producer_resets == 1

            # a crash (the link cut, no bye) at s 9, and a new producer from 0 at once
            assert second._link is not None
            second.reconnect = False
            second._link.ws.transport.abort()
            await asyncio.sleep(0.05)
            third, t0 = await _new_producer(relay.url, stream, 0.3)
            lat = _latencies(consumers, t0, 0.3)
            _report("crash", lat)
            assert max(lat.values()) < INTERVAL, lat

            # a takeover: the producer stops answering (as under SIGSTOP) and a new one
            # takes the stream after the ping timeout (spec §5.7 rule 1), from 0
            await third.close()
            frozen = await open_raw(relay.url, "producer", stream)
            for seq in range(300, 320):
                values = np.full(N_DIMS, np.nan)
                values[H_YAW] = 0.4
                await frozen.ws.send(encode(Frame(seq, seq, values)))
                await asyncio.sleep(0.005)
            await wait_for(lambda: all(s.frames[-1][1] == 319 for s in consumers))
            frozen.ws.transport.pause_reading()  # reads nothing more: answers no ping
            fourth, t0 = await _new_producer(relay.url, stream, 0.5)
            lat = _latencies(consumers, t0, 0.5)
            _report("takeover", lat)
            assert max(lat.values()) < INTERVAL, lat
            frozen.ws.transport.abort()
            await fourth.close()
        finally:
            for c in [*py, js]:
                await c.close()
    assert js.seen.frames and all(c.sub.producer_resets == 3 for c in py)


def test_a_jitter_buffer_restarts_from_a_frame_marked_reset() -> None:
    """Spec §5.10: a frame marked reset starts the buffer afresh, whatever its number and
    time; without the mark a step back within the window is still ignored as stale."""
    interp = Interpolator(delay_us=0)
    values = np.full(N_DIMS, np.nan)
    values[H_YAW] = 0.1
    for seq in range(336, 339):
        assert interp.push(seq, 1_000_000 + seq, values).accepted
    values[H_YAW] = 0.2
    assert interp.push(0, 5, values).status == "stale"
    report = interp.push(0, 5, values, reset=True)
    assert (report.accepted, report.status) == (True, "reset")
    got, _ = interp.sample(5)
    assert got[H_YAW] == pytest.approx(0.2)
    assert interp.push(1, 6, values).status == "in_order"


# ---------------------------------------------------------------- three relays


@pytest.fixture
def three_relays(tmp_path: Path) -> Iterator[list[object]]:
    if cluster_bench.nats_server_binary() is None:
        pytest.skip("nats-server is not installed (.ci/run installs it)")
    nats = cluster_bench.NatsServer(tmp_path / "nats").start()
    try:
        relays = cluster_bench.start_relays(3, broker=nats.url)
        try:
            yield relays
        finally:
            for r in relays:
                r.stop()
    finally:
        nats.stop()


@pytest.fixture
async def cluster_consumers(three_relays: list[object]) -> AsyncIterator[tuple[list[str], list[Seen]]]:
    urls = [r.url for r in three_relays]  # type: ignore[attr-defined]
    stream = "restart.cluster"
    clients: list[PySubscriber | JsSubscriber] = [
        PySubscriber(u, stream, f"py@{'ABC'[i]}") for i, u in enumerate(urls)]
    if _node_websocket_available():
        clients.append(JsSubscriber(urls[2], stream, "js@C"))
    for c in clients:
        await c.start()
    try:
        yield urls, [c.seen for c in clients]
    finally:
        for c in clients:
            await c.close()


async def test_a_restarted_producer_reaches_consumers_on_three_relays_within_one_frame_interval(
        cluster_consumers: tuple[list[str], list[Seen]]) -> None:
    (a, b, _), consumers = cluster_consumers
    stream = "restart.cluster"
    first = await _first_producer(a, stream)
    await wait_for(lambda: all(s.frames and s.frames[-1][1] == OLD_LAST for s in consumers),
                   timeout=5)

    # a clean stop on relay A, the producer again from 0 on A
    await first.close()
    second, t0 = await _new_producer(a, stream, 0.2)
    lat = _latencies(consumers, t0, 0.2)
    _report("cluster, clean stop", lat)
    assert max(lat.values()) < INTERVAL, lat

    # a crash on relay A at s 9, the producer again from 0 on relay B
    assert second._link is not None
    second.reconnect = False
    second._link.ws.transport.abort()
    third, t0 = await _new_producer(b, stream, 0.3)
    lat = _latencies(consumers, t0, 0.3)
    _report("cluster, crash and move to another relay", lat)
    assert max(lat.values()) < INTERVAL, lat
    await third.close()
