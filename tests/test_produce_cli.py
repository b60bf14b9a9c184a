"""``posewire produce`` without inference: source choice, errors, --pose-file, models status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from posewire.cli import build_parser, main
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
    assert main(["produce", "--images", str(tmp_path / "none"), "--record", str(tmp_path / "o.jsonl")]) == 2
    assert "[usage.no_source]" in capsys.readouterr().err
    assert main(["produce", "--video", str(tmp_path / "none.mp4"), "--record", str(tmp_path / "o.jsonl")]) == 2
    assert "[usage.no_source]" in capsys.readouterr().err


def test_missing_models_give_a_stable_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("mediapipe")
    monkeypatch.setenv("POSEWIRE_MODEL_DIR", str(tmp_path / "empty"))
    photos = ROOT / "tests" / "data" / "photos"
    assert main(["produce", "--images", str(photos), "--record", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "[usage.model_missing]" in err and "posewire models fetch" in err
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
