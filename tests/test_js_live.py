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


def _there_and_back(lm: HolisticLandmarks, passes: int) -> HolisticLandmarks:
    """The recording played forward, backward, forward … ``passes`` times: real frames, long
    enough for the calibration's window (150 frames) to slide."""
    order = np.concatenate([np.arange(lm.batch)[::1 if k % 2 == 0 else -1] for k in range(passes)])
    assert lm.hand_scale is not None
    return HolisticLandmarks(lm.pose_world[order], lm.pose_visibility[order], lm.left_hand[order],
                             lm.right_hand[order], None, lm.hand_scale[order])


def test_js_live_calibration_equals_python_on_the_signer() -> None:
    lm = _there_and_back(read_pose_file(SIGNER).landmarks, 5)
    assert lm.batch > 150 + 15 and lm.hand_scale is not None
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
    py.flush()  # the estimate due at frame 45 runs in steps over later frames: finished here
    assert py.current is not None and js["current"] is not None
    assert js["first_at"] == first_at == 0  # the first estimate is used (and sent) at once
    # spec §4.3 "Hand depth gain": the same gain per hand (a grid of 0.05 steps: exact)
    gain = dict(py.current.hand_depth_gain)
    assert js["hand_depth_gain"] == gain, (js["hand_depth_gain"], gain)
    assert js["hand_depth_gain"] != {"l": 1.0, "r": 1.0}  # the recording's hands do need a gain
    # the running sums (spec §4.3) give the two-pass estimate's gain at every estimate over the
    # recording, the window sliding past its first frames
    estimates = js["estimates"]
    assert len(estimates) == -(-lm.batch // 15) and estimates[0]["at"] == 0
    assert [e["running"] for e in estimates] == [e["batch"] for e in estimates]
    assert len({(e["batch"]["l"], e["batch"]["r"]) for e in estimates}) > 2  # the gains move over it
    want = py.current.calibration
    for key, tol in TOLERANCE.items():
        w = getattr(want, key)
        assert w is not None, key
        got = js["current"][key]
        print(f"{key}: JS {got:.4f} m, Python {w:.4f} m ({100 * abs(got - w) / w:.1f} %)")
        assert got is not None and abs(got - w) <= tol * w, (key, got, w)


def test_js_one_euro_filter_equals_python_on_the_signer() -> None:
    """js/posewire/live.mjs VectorFilter is producers/filter.py VectorFilter: per-dim One-Euro,
    the palm as a rotation (slerp), the thumb's double cover, NaN restarts; equal within 1e-9
    over the signer recording's encoded vectors at jittered frame times."""
    from posewire.producers.filter import VectorFilter
    from posewire.producers.landmarks import landmarks_to_vectors

    vectors = landmarks_to_vectors(read_pose_file(SIGNER).landmarks).vectors
    rng = np.random.default_rng(5)
    times = np.cumsum(rng.uniform(0.02, 0.06, len(vectors)))
    py = VectorFilter()
    want = np.array([py(float(t), v) for t, v in zip(times, vectors, strict=True)])
    assert NODE is not None
    payload = {"times": times.tolist(),
               "vectors": [[x if math.isfinite(x) else None for x in v] for v in vectors.tolist()]}
    done = subprocess.run([NODE, str(ROOT / "js" / "test" / "one_euro.mjs")], input=json.dumps(payload),
                          capture_output=True, text=True, timeout=60, check=True)
    got = np.array([[np.nan if x is None else x for x in v] for v in json.loads(done.stdout)])
    assert np.isnan(want).any() and (np.abs(want - vectors) > 1e-3).any()  # NaNs and real smoothing in the test
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9, equal_nan=True)


def test_js_visibility_hold_equals_python_on_the_signer() -> None:
    """js/posewire/live.mjs VisibilityHold is producers/filter.py VisibilityHold (spec §7.3
    "Visibility hysteresis"): exactly equal over the signer recording's pose visibilities,
    with noise near the cuts, missing values and landmarks outside the image added."""
    from posewire.producers.filter import VisibilityHold

    vis = read_pose_file(SIGNER).landmarks.pose_visibility
    rng = np.random.default_rng(7)
    noisy = np.clip(vis + rng.normal(0.0, 0.1, vis.shape), 0.0, 1.0)
    noisy[rng.random(noisy.shape) < 0.02] = np.nan
    inside = rng.random(noisy.shape) > 0.05
    hold = VisibilityHold()
    want = np.array([hold(v, f) for v, f in zip(noisy, inside, strict=True)])
    assert NODE is not None
    payload = {"width": hold.width, "in_frame": inside.tolist(),
               "visibility": [[x if math.isfinite(x) else None for x in v] for v in noisy.tolist()]}
    done = subprocess.run([NODE, str(ROOT / "js" / "test" / "visibility_hold.mjs")], input=json.dumps(payload),
                          capture_output=True, text=True, timeout=60, check=True)
    got = np.array(json.loads(done.stdout))
    assert (want != np.nan_to_num(noisy)).any() and (np.diff(want, axis=0) != 0).any()  # held and moved
    np.testing.assert_array_equal(got, want)
