"""The browser producer's live calibration (js/posewire/live.mjs, spec §4.1) against the
Python producer's (producers/live.py LiveCalibration) on the real signer recording: the same
distances within the stated tolerance. The JS estimate measures in world coordinates rather
than the body frame and takes the torso as the straight neck–hip chord (Python undoes the
spine's bend, §4.5): shoulder width, arm and hand length within 3 %, the torso within 10 %.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from posewire.producers.landmarks import HolisticLandmarks
from posewire.producers.live import LiveCalibration
from posewire.producers.poseformat import read_pose_file

ROOT = Path(__file__).resolve().parent.parent
SIGNER = ROOT / "tests" / "data" / "holistic_signer.pose"
NODE = shutil.which("node")
TOLERANCE = {"shoulder_width": 0.03, "arm_length": 0.03, "hand_length": 0.03, "torso_length": 0.10}

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def _pts(a: np.ndarray) -> list[Any]:
    return [p if all(math.isfinite(c) for c in p) else None for p in a.tolist()]


def test_js_live_calibration_equals_python_on_the_signer() -> None:
    lm = read_pose_file(SIGNER).landmarks
    assert lm.hand_scale is not None
    frames = [{"pose_world": _pts(lm.pose_world[i]), "pose_visibility": lm.pose_visibility[i].tolist(),
               "left_hand": _pts(lm.left_hand[i]) if np.isfinite(lm.left_hand[i]).all() else None,
               "right_hand": _pts(lm.right_hand[i]) if np.isfinite(lm.right_hand[i]).all() else None}
              for i in range(lm.batch)]
    scales = [float(s) if math.isfinite(s) else None for s in lm.hand_scale.tolist()]
    assert NODE is not None
    done = subprocess.run([NODE, str(ROOT / "js" / "test" / "live_calibration.mjs")],
                          input=json.dumps({"frames": frames, "hand_scale": scales}), capture_output=True,
                          text=True, timeout=60, check=True)
    js = json.loads(done.stdout)

    py = LiveCalibration()
    first_at = None
    for i in range(lm.batch):
        one = HolisticLandmarks(lm.pose_world[i:i + 1], lm.pose_visibility[i:i + 1], lm.left_hand[i:i + 1],
                                lm.right_hand[i:i + 1], None, lm.hand_scale[i:i + 1])
        if py.update(one) is not None and first_at is None:
            first_at = i
    assert py.current is not None and js["current"] is not None
    assert js["first_at"] == first_at == 0  # the first estimate is used (and sent) at once
    want = py.current.calibration
    for key, tol in TOLERANCE.items():
        w = getattr(want, key)
        assert w is not None, key
        got = js["current"][key]
        print(f"{key}: JS {got:.4f} m, Python {w:.4f} m ({100 * abs(got - w) / w:.1f} %)")
        assert got is not None and abs(got - w) <= tol * w, (key, got, w)
