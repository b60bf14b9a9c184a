"""`posewire demo`: the whole pipeline on loopback (relay, clients, decode)."""

from __future__ import annotations

import subprocess
import sys

from posewire.demo import DEFAULT_RECORDING, run_demo


async def test_demo_decodes_every_frame_of_the_recording() -> None:
    lines: list[str] = []
    summary = await run_demo(DEFAULT_RECORDING, frames=8, speed=0, out=lines.append)
    assert summary.frames == 8 and len(lines) == 9
    assert [int(line.split()[1]) for line in lines[:8]] == list(range(8))
    # the recording raises the right arm: the right hand is on the character's right (-X)
    # and above the neck of the 1.75 m helix avatar (~1.47 m)
    for line in lines[:8]:
        x, y, _ = (float(v) for v in line.split("hand_r at (")[1].split(")")[0].split(","))
        assert x < 0 and y > 1.47
    assert 100 < summary.mean_wire_bytes <= 250
    assert lines[-1].startswith("8 of 8 frames from wave.jsonl")


def test_demo_command_runs_and_fails_cleanly_on_a_missing_file() -> None:
    done = subprocess.run([sys.executable, "-m", "posewire.cli", "demo", "--frames", "3",
                           "--speed", "0"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith("3 of 3 frames from wave.jsonl")
    missing = subprocess.run([sys.executable, "-m", "posewire.cli", "demo", "--recording",
                              "/nonexistent.jsonl"], capture_output=True, text=True,
                             timeout=60, check=False)
    assert missing.returncode == 1 and missing.stderr.startswith("posewire demo:")
