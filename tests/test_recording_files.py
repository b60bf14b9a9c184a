"""Recordings as files (spec §8) in the commands: one reader for every format, the writers
chosen by name, a byte-identical replay through the relay, cut files read to their last
whole frame."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import numpy as np
import pytest
from netutil import TIMEOUT, wait_for

from posewire.cli import produce
from posewire.cli.command import _consume, build_parser, main
from posewire.codec import container, wire
from posewire.codec.calibration import Calibration
from posewire.codec.conditions import Conditions
from posewire.producers.recording import (
    ContainerWriter,
    RecordedFrame,
    RecordingHeader,
    open_recording,
    read_recording,
    recording_kind,
    write_recording,
)
from posewire.relay import Relay

ROOT = Path(__file__).resolve().parents[1]
WAVE = ROOT / "tests" / "data" / "wave.jsonl"
POSE = ROOT / "tests" / "data" / "holistic_signer.pose"  # MIT, see LICENSE-pose-recording.txt


def _pwr_of_wave(tmp_path: Path) -> Path:
    out = tmp_path / "wave.pwr"
    assert main(["produce", "--replay", str(WAVE), "--record", str(out)]) == 0
    return out


def test_every_reader_takes_both_formats_and_the_writer_goes_by_the_name(tmp_path: Path) -> None:
    pwr = _pwr_of_wave(tmp_path)
    assert recording_kind(pwr) == "pwr" and recording_kind(WAVE) == "jsonl"
    assert pwr.read_bytes()[:8] == container.MAGIC
    h1, jsonl = read_recording(WAVE)
    h2, frames = read_recording(pwr)
    assert h2.format == "pwr" and h2.calibration == h1.calibration
    assert len(frames) == len(jsonl) == 120
    for a, b in zip(jsonl, frames, strict=True):
        assert a.t_us == b.t_us and a.conditions == b.conditions and set(a.values) == set(b.values)
        # one quantization step of the wire (spec §5.4)
        assert max(abs(a.values[k] - b.values[k]) for k in a.values) <= 1 / 254 + 1e-12
        assert b.wire is not None and wire.decode(b.wire).timestamp_us == b.t_us  # type: ignore[union-attr]
    # the container is much smaller than the lines
    assert pwr.stat().st_size * 8 < WAVE.stat().st_size
    # JSON lines stay JSON lines for any other name
    again = tmp_path / "again.jsonl"
    assert main(["produce", "--replay", str(pwr), "--record", str(again)]) == 0
    assert again.read_text().startswith('{"format":"posewire-recording"')
    assert [f.t_us for f in read_recording(again)[1]] == [f.t_us for f in frames]


def test_a_recorded_frame_carries_its_condition_state_only_when_it_changed(tmp_path: Path) -> None:
    lost = Conditions(tracking={"hand_l": "lost"})
    frames = [RecordedFrame(i * 1000, {"h_yaw": 0.1}, c) for i, c in
              enumerate([Conditions(), Conditions(), lost, lost, Conditions()])]
    path = tmp_path / "c.pwr"
    write_recording(path, frames, calibration=Calibration(0.19, 0.5, 0.6, 0.36))
    rec = open_recording(path)
    sent = [m for _, m, _ in rec.messages or [] if isinstance(m, wire.Frame)]
    assert [f.conditions for f in sent] == [Conditions(), None, lost, None, Conditions()]
    assert [f.conditions for f in rec.frames] == [c.conditions for c in frames]  # spec §5.5 resolved
    assert isinstance(rec.messages[0][1], wire.Calibration)  # type: ignore[index]


def test_a_killed_writer_leaves_a_file_read_to_its_last_frame(tmp_path: Path) -> None:
    path = tmp_path / "cut.pwr"
    writer = ContainerWriter(path, header=RecordingHeader(format="pwr"))
    writer.open()
    for i in range(6):
        writer.write(RecordedFrame(i * 40_000, {"h_yaw": i / 10}))
    writer.close(complete=False)  # as a crash: no index
    data = path.read_bytes()
    path.write_bytes(data[:-5])  # and the last record half written
    rec = open_recording(path)
    assert [f.values["h_yaw"] for f in rec.frames] == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4], abs=1e-4)
    assert rec.lost is not None and "recording.truncated" in rec.lost and "5 frames" in rec.lost
    # every command reads it: export says what was lost
    glb = tmp_path / "cut.glb"
    assert main(["export", "--recording", str(path), "--out", str(glb)]) == 0
    assert glb.stat().st_size > 0


def test_a_damaged_recording_gives_one_line_with_a_stable_code(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    pwr = _pwr_of_wave(tmp_path)
    bad = bytearray(pwr.read_bytes())
    bad[20] ^= 0xFF  # inside the header's registry hash: the header's CRC32
    pwr.write_bytes(bytes(bad))
    capsys.readouterr()
    assert main(["export", "--recording", str(pwr), "--out", str(tmp_path / "x.glb")]) == 1
    err = capsys.readouterr().err
    assert err == "posewire export: wave.pwr: the header's CRC32 does not match (recording.corrupt)\n"
    assert main(["produce", "--replay", str(pwr), "--record", str(tmp_path / "y.pwr")]) == 1
    assert "(recording.corrupt)" in capsys.readouterr().err


async def test_a_pwr_replay_is_byte_identical_through_the_relay(tmp_path: Path) -> None:
    # spec §8.4: a producer's recording replayed once with its timestamps reaches consumers
    # as the bytes it holds; consume --record keeps them as they came
    pwr = _pwr_of_wave(tmp_path)
    recorded = open_recording(pwr).messages or []
    got = tmp_path / "got.pwr"
    async with Relay("127.0.0.1", port=0) as relay:
        args = build_parser().parse_args(["consume", "--stream", "w", "--url", relay.url,
                                          "--frames", "120", "--record", str(got)])
        consume = asyncio.create_task(_consume(args))
        await wait_for(lambda: relay.streams.get("w", (0, 0))[1] == 1)
        replay = build_parser().parse_args(["produce", "--replay", str(pwr), "--url", relay.url, "--stream", "w",
                                            "--keep-timestamps", "--speed", "1"])  # within the relay's rate
        replay.token = None
        sender = asyncio.create_task(produce._publish_recorded(replay))
        async with asyncio.timeout(10 * TIMEOUT):
            assert await consume == 0
            assert await sender == 0
    received = open_recording(got)
    assert received.contents is not None and received.contents.complete
    assert [data for _, _, data in received.messages or []] == [data for _, _, data in recorded]
    hello = received.contents.records[0].message
    assert isinstance(hello, wire.Hello) and hello.stream == "w" and hello.token is None


def test_read_recording_converts_a_pose_file(tmp_path: Path) -> None:
    pytest.importorskip("pose_format")
    header, frames = read_recording(POSE)
    assert header.format == "pwr" and header.calibration is not None and len(frames) == 47
    assert all(math.isfinite(v) for f in frames for v in f.values.values())
    assert np.isfinite(frames[0].vector()).sum() == len(frames[0].values)


def test_vmc_sends_a_recording_as_bundles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pythonosc")
    import socket

    pwr = _pwr_of_wave(tmp_path)
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    sink.settimeout(TIMEOUT)
    try:
        port = sink.getsockname()[1]
        assert main(["vmc", "--recording", str(pwr), "--to", f"127.0.0.1:{port}", "--frames", "5",
                     "--speed", "0"]) == 0
        bundles = [sink.recv(65536) for _ in range(5)]
    finally:
        sink.close()
    assert all(b.startswith(b"#bundle") and b"/VMC/Ext/Bone/Pos" in b for b in bundles)
    assert capsys.readouterr().out.strip().endswith(f"sent 5 VMC bundles to 127.0.0.1:{port}")
