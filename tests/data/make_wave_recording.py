"""Generate ``tests/data/wave.jsonl``: 120 frames (2 s at 60 fps) of a synthetic wave.

The right arm is raised beside the head (elbow spread out), the open right palm faces
forward and rocks ±25° about the palm normal at 1.5 Hz (a wave); the head turns with a
0.5 Hz yaw sine of ±18°; the left arm hangs at the registry default; a light "happy"
affect layer rides along as a condition. Every frame carries all dims (full mask).

Run from the repository root: ``.venv/bin/python tests/data/make_wave_recording.py``.
"""

from __future__ import annotations

import math
from pathlib import Path

from posewire.codec.calibration import REFERENCE_CALIBRATION
from posewire.codec.conditions import Affect, Conditions
from posewire.codec.vector import DEFAULTS, to_dict
from posewire.producers.recording import RecordedFrame, write_recording

__all__ = ["FPS", "N_FRAMES", "wave_frames"]

FPS = 60
N_FRAMES = 120


def wave_frames(n_frames: int = N_FRAMES, fps: int = FPS) -> list[RecordedFrame]:
    """The synthetic wave, one :class:`RecordedFrame` per 1/fps seconds."""
    conditions = Conditions(affect=Affect("happy", 0.4, "blend"))
    frames = []
    for i in range(n_frames):
        t = i / fps
        values = to_dict(DEFAULTS)
        # right arm raised beside the head (spec §4.1, units of L; + a_x = lateral)
        values["a_x_r"] = 0.34 + 0.02 * math.sin(2 * math.pi * 1.5 * t)
        values["a_y_r"] = 0.30
        values["a_z_r"] = 0.12
        values["a_spread_r"] = 0.65
        # palm forward (right identity, spec §3.3) rocked about the palm normal +Z
        roll = math.radians(25.0) * math.sin(2 * math.pi * 1.5 * t)
        values["w_qx_r"] = 0.0
        values["w_qy_r"] = 0.0
        values["w_qz_r"] = math.sin(roll / 2)
        for finger in ("index", "middle", "ring", "pinky"):
            values[f"g_{finger}_curl_r"] = 0.05
            values[f"g_{finger}_fold_r"] = 0.05
        values["g_index_side_r"] = -0.3
        values["g_pinky_side_r"] = 0.3
        values["g_thumb_side_r"] = 0.4
        # head yaw sine ±18° (h_yaw max 90°, spec §4.4)
        values["h_yaw"] = 0.2 * math.sin(2 * math.pi * 0.5 * t)
        values["h_pitch"] = -0.05
        values["m_smile_l"] = values["m_smile_r"] = 0.3
        values = {k: round(v, 5) for k, v in values.items()}
        frames.append(RecordedFrame(t_us=round(t * 1e6), values=values, conditions=conditions))
    return frames


if __name__ == "__main__":
    out = Path(__file__).with_name("wave.jsonl")
    n = write_recording(out, wave_frames(), calibration=REFERENCE_CALIBRATION)
    print(f"wrote {n} frames to {out}")
