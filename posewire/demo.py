"""``posewire demo``: the whole pipeline once, on loopback, in one process.

A recording (producer side) is published through a real relay over real websockets; a
subscriber decodes each frame for the ``helix-humanoid@1`` avatar of seed 001 (bone
rotations by IK and FK, spec §4.1–4.5) and its face (ARKit weights, spec §4.6–4.7), and
prints one line per frame and a summary: wire bytes, end-to-end latency, decode time.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from posewire.codec.errors import UsageError
from posewire.codec.wire import Frame, encode
from posewire.consumers.face import face_weights
from posewire.consumers.pose import decode_pose
from posewire.consumers.skeleton import fk, helix_humanoid
from posewire.consumers.subscriber import Subscriber
from posewire.producers.publisher import Publisher
from posewire.producers.recording import read_recording

from .relay import Relay
from .transport import RelayError

__all__ = ["DEFAULT_RECORDING", "DemoSummary", "run_demo"]

#: A committed recording (a waving right arm, head yaw, affect), so the demo runs anywhere.
DEFAULT_RECORDING = Path(__file__).resolve().parent.parent / "tests" / "data" / "wave.jsonl"


@dataclass(frozen=True)
class DemoSummary:
    """What the demo measured."""

    frames: int
    mean_wire_bytes: float
    latency_ms_p50: float
    latency_ms_max: float
    decode_us_median: float
    fk_us_median: float


async def run_demo(recording: Path, *, frames: int | None = None, speed: float = 1.0,
                   out: Callable[[str], None] = print) -> DemoSummary:
    """Replay ``recording`` through a loopback relay and decode every received frame.

    ``frames``: how many frames to play (default: all); ``speed``: playback rate
    (1 = the recording's own timing, 0 = as fast as possible).
    """
    header, records = read_recording(recording)
    records = records[:frames] if frames else records
    if not records:
        raise ValueError(f"{recording} holds no frames")
    skeleton = helix_humanoid()
    hand_r = skeleton.names.index("hand_r")
    wire_bytes = [len(encode(Frame(i, r.t_us, r.vector(), r.conditions)))
                  for i, r in enumerate(records)]

    latencies: list[float] = []
    decode_us: list[float] = []
    fk_us: list[float] = []
    async with (Relay("127.0.0.1", port=0, status_every=0) as relay,
                Subscriber(relay.url, "demo", merge=True) as sub):
        handled = asyncio.Event()

        async def publish() -> None:
            async with Publisher(relay.url, "demo", calibration=header.calibration) as pub:
                start, t0 = time.monotonic(), records[0].t_us
                for rec in records:
                    if speed > 0:
                        delay = (rec.t_us - t0) / 1e6 / speed - (time.monotonic() - start)
                        if delay > 0:
                            await asyncio.sleep(delay)
                    await pub.send_frame(rec.vector(), conditions=rec.conditions)
                    if speed <= 0:
                        # as fast as the pipeline goes: the subscriber yields the newest
                        # state (latest wins), so wait until this frame was decoded
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(handled.wait(), 10.0)
                        handled.clear()

        producer = asyncio.create_task(publish())
        while True:
            # a frame the relay dropped (latest-wins, rate limit) never comes: stop once the
            # producer is done and the stream has gone quiet
            try:
                frame = await asyncio.wait_for(sub.recv(), 0.5 if producer.done() else 10.0)
            except TimeoutError:
                break
            if frame is None:
                break
            latencies.append(time.time_ns() / 1e6 - frame.timestamp_us / 1e3)
            began = time.perf_counter()
            pose = decode_pose(frame.values[None], skeleton)
            mouthing = frame.conditions.mouthing if frame.conditions else None
            face = face_weights(frame.values[None], capability="viseme15",
                                visemes=None if mouthing is None else [mouthing])
            decoded = time.perf_counter()
            positions, _ = fk(skeleton, pose.local_rotations)
            decode_us.append((decoded - began) * 1e6)
            fk_us.append((time.perf_counter() - decoded) * 1e6)
            wrist = positions[0, hand_r]
            strongest = sorted(((float(w[0]), n) for n, w in face.arkit.items()),
                               reverse=True)[:2]
            morphs = "  ".join(f"{n} {w:.2f}" for w, n in strongest if w > 0) or "-"
            out(f"seq {frame.seq:4d}  {latencies[-1]:6.2f} ms  hand_r at "
                f"({wrist[0]:+.3f}, {wrist[1]:+.3f}, {wrist[2]:+.3f}) m  {morphs}")
            handled.set()
            if frame.seq >= len(records) - 1:
                break
        await producer

    if not latencies:
        raise ValueError("no frame came back from the relay")
    summary = DemoSummary(
        frames=len(latencies), mean_wire_bytes=float(np.mean(wire_bytes)),
        latency_ms_p50=statistics.median(latencies), latency_ms_max=max(latencies),
        decode_us_median=statistics.median(decode_us), fk_us_median=statistics.median(fk_us))
    out(f"{summary.frames} of {len(records)} frames from {recording.name}: {summary.mean_wire_bytes:.0f} B per "
        f"frame on the wire; latency p50 {summary.latency_ms_p50:.2f} ms, max "
        f"{summary.latency_ms_max:.2f} ms; decode (bone rotations, IK, face) "
        f"{summary.decode_us_median:.0f} µs, world positions (FK) {summary.fk_us_median:.0f} µs "
        f"per frame (medians)")
    return summary


def main_demo(recording: Path, *, frames: int | None, speed: float) -> int:
    """Entry point of ``posewire demo``; returns the exit status."""
    try:
        asyncio.run(run_demo(recording, frames=frames, speed=speed))
    except (OSError, ValueError, UsageError, RelayError) as exc:
        print(f"posewire demo: {exc}", file=sys.stderr)
        return 1
    return 0
