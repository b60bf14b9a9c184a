"""``posewire convert``: .pose files and folders -> recordings (spec §8), in parallel,
resumable, bad files reported and skipped, a closing table."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from posewire.cli.command import main
from posewire.cli.convert import Job, convert_one, is_complete, plan
from posewire.codec import container
from posewire.producers.recording import read_recording

pytest.importorskip("pose_format")

ROOT = Path(__file__).resolve().parents[1]
POSE = ROOT / "tests" / "data" / "holistic_signer.pose"  # MIT, see LICENSE-pose-recording.txt


def _corpus(tmp_path: Path) -> Path:
    """A folder: the committed signer twice (one in a sub-folder), a file cut in half, and
    bytes that are no .pose file at all."""
    corpus = tmp_path / "corpus"
    (corpus / "deeper").mkdir(parents=True)
    shutil.copy(POSE, corpus / "signer.pose")
    shutil.copy(POSE, corpus / "deeper" / "signer.pose")
    data = POSE.read_bytes()
    (corpus / "cut.pose").write_bytes(data[: len(data) // 2])
    (corpus / "noise.pose").write_bytes(b"\x00\x01 not a pose file " * 40)
    (corpus / "notes.txt").write_text("not an input")
    return corpus


def test_convert_a_folder_in_parallel_reports_bad_files_and_prints_the_table(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = _corpus(tmp_path)
    out = tmp_path / "pwr"
    assert main(["convert", str(corpus), "--out", str(out), "--jobs", "2"]) == 3  # some files failed
    captured = capsys.readouterr()
    assert "4 files on 2 workers" in captured.err and "4/4 files" in captured.err
    table = captured.out
    assert "files: 4 (2 converted, 0 complete before, 2 failed); frames: 94" in table
    assert f"failed: {corpus / 'cut.pose'}: not a readable .pose file" in table
    assert f"failed: {corpus / 'noise.pose'}: not a readable .pose file" in table
    assert "bytes per frame: " in table and "× smaller" in table and "frames/s per core" in table
    # the layout below the folder is kept; each output is a complete recording of the source
    for rel in ("signer.pwr", "deeper/signer.pwr"):
        got = container.read((out / rel).read_bytes(), strict=True)
        assert got.index is not None and got.index.frames == 47
    header, frames = read_recording(out / "signer.pwr")
    assert header.calibration is not None and len(frames) == 47
    assert not list(out.rglob(".*.partial.pwr")) and not (out / "cut.pwr").exists()
    # bytes per frame against the source: far smaller
    source = POSE.stat().st_size / 47
    row = next(line for line in table.splitlines() if line.startswith(str(corpus / "signer.pose")))
    assert float(row.split()[-2]) * 50 < source


def test_convert_resumes_and_skips_complete_recordings(tmp_path: Path) -> None:
    source = tmp_path / "a.pose"
    shutil.copy(POSE, source)
    job = plan([source], tmp_path / "out")[0]
    assert job == Job(source, tmp_path / "out" / "a.pwr")
    # an interrupted earlier run left a half-written temporary file and a cut output
    job.target.parent.mkdir()
    (job.target.parent / ".a.partial.pwr").write_bytes(b"\x89PWR")
    first = convert_one(job)
    assert first.status == "converted" and first.frames == 47 and is_complete(job.target)
    again = convert_one(job)
    assert again.status == "complete" and again.frames == 47  # skipped: already complete
    cut = job.target.read_bytes()[:-10]
    job.target.write_bytes(cut)  # a cut output is not complete: converted again
    assert not is_complete(job.target)
    assert convert_one(job).status == "converted" and is_complete(job.target)
    assert convert_one(job, force=True).status == "converted"


def test_convert_without_inputs_or_with_a_missing_one_says_so(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.startswith("posewire convert: no such file or folder")
    (tmp_path / "empty").mkdir()
    assert main(["convert", str(tmp_path / "empty")]) == 2
    assert "no .pose files found" in capsys.readouterr().err


def test_convert_writes_beside_the_sources_without_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "b.pose"
    shutil.copy(POSE, source)
    assert main(["convert", str(source), "--jobs", "1"]) == 0
    assert is_complete(tmp_path / "b.pwr")
    assert main(["convert", str(source)]) == 0
    assert "(done before)" in capsys.readouterr().out
