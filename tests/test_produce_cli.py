"""``posewire produce`` without inference: source choice, errors, --pose-file, models status."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from posewire.cli.command import build_parser, main
from posewire.producers.recording import read_recording

ROOT = Path(__file__).resolve().parents[1]
POSE = ROOT / "tests" / "data" / "holistic_signer.pose"  # MIT, see LICENSE-pose-recording.txt


def test_exactly_one_source_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["produce", "--record", "x.jsonl"])
    with pytest.raises(SystemExit):
        parser.parse_args(["produce", "--webcam", "--video", "a.mp4"])
    args = parser.parse_args(["produce", "--webcam"])
    assert args.webcam == 0
    assert parser.parse_args(["produce", "--webcam", "2"]).webcam == 2


def test_missing_sources_give_a_stable_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # plain language first, the stable code last (posewire.cli.conventions)
    assert main(["produce", "--images", str(tmp_path / "none"), "--record", str(tmp_path / "o.jsonl")]) == 2
    assert capsys.readouterr().err == f"posewire produce: no image folder {tmp_path / 'none'} (usage.no_source)\n"
    assert main(["produce", "--video", str(tmp_path / "none.mp4"), "--record", str(tmp_path / "o.jsonl")]) == 2
    assert capsys.readouterr().err == f"posewire produce: no video file {tmp_path / 'none.mp4'} (usage.no_source)\n"


def test_missing_models_give_a_stable_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("mediapipe")
    monkeypatch.setenv("POSEWIRE_MODEL_DIR", str(tmp_path / "empty"))
    photos = ROOT / "tests" / "data" / "photos"
    assert main(["produce", "--images", str(photos), "--record", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "(usage.model_missing)" in err and "[usage" not in err and "posewire models fetch" in err
    assert main(["models", "status"]) == 1
    assert "not in the cache" in capsys.readouterr().out


def test_pose_file_to_a_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pose_format")
    out = tmp_path / "signer.jsonl"
    assert main(["produce", "--pose-file", str(POSE), "--record", str(out)]) == 0
    assert "tracked:" in capsys.readouterr().err
    header, frames = read_recording(out)
    assert header.calibration is not None and header.calibration.shoulder_width is not None
    assert len(frames) > 10 and frames[1].t_us > frames[0].t_us
    assert any("a_x_r" in f.values for f in frames)
    first = json.loads(out.read_text().splitlines()[1])
    assert "t_us" in first


# ---------------------------------------------------------------- progress in a log


def _ticks(times: list[float]) -> Callable[[], float]:
    """A clock that returns ``times`` one call after another (the first: the start)."""
    it = iter(times)
    return lambda: next(it)


def test_progress_in_a_log_prints_each_second_then_every_ten_and_its_last_state() -> None:
    import io

    from posewire.cli.produce import Progress

    out = io.StringIO()  # not a terminal
    times = [0.0, 0.4, 0.8, 1.2, 1.6, 31.0, 35.0, 42.0]
    bar = Progress(8, live=False, stream=out, clock=_ticks([0.0, *times]))
    for _ in times:
        bar.update(inference_ms={"holistic": 30.0}, encode_us=100.0, tracked=("head",), total_bytes=0)
    bar.finish()
    counts = [line.split("]")[1].split()[0] for line in out.getvalue().splitlines()]
    # once a second for the first 30 s (frames 1 and 4), then every 10 s (6 at 31 s, 8 at 42 s)
    assert counts == ["1/8", "4/8", "6/8", "8/8"]

    out = io.StringIO()
    short = Progress(3, live=False, stream=out, clock=_ticks([0.0, 0.0, 0.3, 0.6]))
    for _ in range(3):
        short.update(inference_ms={"holistic": 30.0}, encode_us=100.0, tracked=(), total_bytes=0)
    short.finish()  # the last state of a short run is logged too
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and " 1/3 " in lines[0] and " 3/3 100% " in lines[1]


def test_progress_counts_to_count_when_it_is_smaller() -> None:
    from types import SimpleNamespace

    from posewire.cli.produce import _expected

    video = SimpleNamespace(total=795, live=False)
    assert _expected(video, 150) == 150
    assert _expected(video, 0) == 795
    assert _expected(video, 1000) == 795
    assert _expected(SimpleNamespace(total=None, live=False), 20) == 20
    assert _expected(SimpleNamespace(total=None, live=True), 20) is None
