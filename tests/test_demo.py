"""`posewire demo`: relay, looped real recording, live viewer and a decoding subscriber."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from posewire.servers.demo import DEFAULT_RECORDING, load_recording, run_demo

ROOT = Path(__file__).resolve().parents[1]


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.status == 200
        body: bytes = resp.read()
        return body


def test_the_default_recording_is_the_real_signer() -> None:
    # inside the package (the wheel carries it), a posewire recording made from the
    # committed signer capture (tests/test_generated.py checks the conversion)
    _header, frames = load_recording(DEFAULT_RECORDING)
    assert DEFAULT_RECORDING.name == "holistic_signer.jsonl" and len(frames) == 47
    assert DEFAULT_RECORDING.parent == ROOT / "posewire" / "data"
    licence = (DEFAULT_RECORDING.parent / "LICENSE-holistic_signer.txt").read_text()
    assert licence.count("Copyright (c) 2021 Amit Moryossef") == 1


def test_the_default_recording_moves_face_and_mouth_in_every_frame() -> None:
    # the face panel and the visemes are alive in the demo: MediaPipe's
    # blendshape model on the signer's own face mesh (tools/face_blendshapes.py), every frame
    from posewire.producers.recording import RecordedFrame

    _header, frames = load_recording(DEFAULT_RECORDING)
    recorded = [frame for frame in frames if isinstance(frame, RecordedFrame)]
    assert len(recorded) == 47
    for frame in recorded:
        assert frame.conditions is not None  # frames read from a file carry the complete state
        assert "face" not in frame.conditions.tracking and "mouth" not in frame.conditions.tracking
    def spread(dim: str) -> float:
        values = [frame.values[dim] for frame in recorded]
        return max(values) - min(values)

    # the signer mouths the word (lips pushed out and rolled in), blinks and looks around
    assert spread("m_pucker") > 0.5 and spread("m_roll") > 0.3 and spread("m_jaw") > 0.05
    assert spread("f_blink_l") > 0.1 and spread("f_gaze_yaw") > 0.3
    # and the visemes: the mix estimated from that mouth (spec §4.7), aa as the jaw opens
    from posewire.codec.registry import VISEMES

    aa = [frame.conditions.mouthing[VISEMES.index("aa")] if frame.conditions.mouthing else 0.0
          for frame in recorded]
    assert max(aa) - min(aa) >= 0.1


async def test_demo_serves_the_viewer_while_it_plays_and_loops() -> None:
    lines: list[str] = []
    pages: dict[str, bytes] = {}

    def ready(url: str) -> None:
        # the page, its modules and its data are served while the demo runs
        for path in ("", "config.json", "js/viewer/viewer.mjs", "schemas/registry.json",
                     "node_modules/three/build/three.module.js", "avatar/skeleton.json"):
            pages[path] = fetch(url + path)

    summary = await run_demo(DEFAULT_RECORDING, frames=60, speed=4.0, port=0, out=lines.append,
                             on_ready=ready)
    assert b"posewire viewer" in pages[""] and b"importmap" in pages[""]
    config = json.loads(pages["config.json"])
    assert config["stream"] == "demo" and config["relay"].startswith("ws://127.0.0.1:")
    assert len(json.loads(pages["avatar/skeleton.json"])["names"]) == 55
    assert summary.frames_sent == 60  # 47 frames, looped
    # the subscriber yields the newest state: under load some frames are coalesced
    assert 10 <= summary.frames_received <= 60
    assert 100 < sum(summary.wire_bytes) / len(summary.wire_bytes) <= 250
    assert any(line.startswith("viewer: http://127.0.0.1:") for line in lines)
    assert lines[-1].startswith("60 frames sent,")


def test_demo_command_ends_by_itself_and_fails_cleanly_on_a_missing_file(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "posewire.cli", "demo", "--frames", "100", "--speed", "4",
                             "--no-browser", "--port", "0", "--relay-port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = ""
        for line in proc.stdout:
            if line.startswith("viewer: "):
                url = line.split()[1]
                break
        assert url.startswith("http://127.0.0.1:")
        assert b"posewire viewer" in fetch(url)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert out.strip().splitlines()[-1].startswith("100 frames sent,")
    missing = subprocess.run([sys.executable, "-m", "posewire.cli", "demo", "--recording",
                              str(tmp_path / "none.jsonl"), "--no-browser", "--port", "0"],
                             capture_output=True, text=True, timeout=60, check=False)
    assert missing.returncode == 1 and missing.stderr.startswith("posewire demo:")


async def test_demo_capture_serves_the_capture_page_and_decodes_what_it_sends() -> None:
    # the capture page is the producer (here a Python publisher stands in for the browser,
    # tests/test_capture_browser.py drives the real page): the demo decodes what arrives
    from posewire.producers.publisher import Publisher

    lines: list[str] = []
    pages: dict[str, bytes] = {}
    ready = asyncio.Event()

    def on_ready(url: str) -> None:
        pages["capture"] = fetch(url + "capture")
        pages["config"] = fetch(url + "config.json")
        ready.set()

    async def page() -> None:
        await ready.wait()
        relay = json.loads(pages["config"])["relay"]
        async with Publisher(relay, "demo") as pub:
            for k in range(200):
                await pub.send_frame({"h_yaw": 0.01 * k}, timestamp_us=k)
                await asyncio.sleep(0.01)

    sender = asyncio.create_task(page())
    summary = await asyncio.wait_for(run_demo(DEFAULT_RECORDING, frames=5, port=0, capture=True, out=lines.append,
                                              on_ready=on_ready), 60)
    sender.cancel()
    assert b"posewire capture" in pages["capture"]
    assert summary.frames_received >= 5 and summary.frames_sent == summary.frames_received
    assert lines[0].startswith("posewire demo: the capture page (this browser's webcam")
    assert any(line.startswith("capture: http://127.0.0.1:") and "/capture " in line for line in lines)


def test_demo_takes_a_camera_index_or_url_and_one_producer() -> None:
    from posewire.cli.command import build_parser

    parse = build_parser().parse_args
    assert parse(["demo", "--webcam"]).webcam == 0
    assert parse(["demo", "--webcam", "2"]).webcam == 2
    assert parse(["demo", "--webcam", "http://127.0.0.1:8081/video"]).webcam == "http://127.0.0.1:8081/video"
    assert parse(["demo", "--capture"]).capture is True
    with pytest.raises(SystemExit):
        parse(["demo", "--capture", "--webcam", "1"])
