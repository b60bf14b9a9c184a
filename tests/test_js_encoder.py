"""The JavaScript encoder (js/posewire/encoder.mjs) equals the Python encoder on the same
landmarks within the tolerance of spec §6.10 (1e-7 on every dim; tracking states and report
counts exact), beyond the vectors of spec/conformance/encoder.json: every frame of the real
signer recording and noisy ground truth with random failure modes, both mirror modes.

The JS side runs through the kit's JSON-lines adapter (tests/interop/kit.mjs, op
``encoder.landmarks``), the Python side through the reference op.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from posewire.conformance import ProcessExecutor
from posewire.conformance.ops_encoder import encode_frames
from posewire.groundtruth import noise, random_vectors, render
from posewire.producers.landmarks import POSE_POINTS, HolisticLandmarks, landmarks_to_vectors
from posewire.producers.poseformat import read_pose_file

ROOT = Path(__file__).resolve().parent.parent
KIT = ROOT / "tests" / "interop" / "kit.mjs"
SIGNER = ROOT / "tests" / "data" / "holistic_signer.pose"
TOLERANCE = 1e-7  # spec §6.10

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def _pts(a: np.ndarray) -> list[Any]:
    return [p if all(math.isfinite(c) for c in p) else None for p in a.tolist()]


def _frame(lm: HolisticLandmarks, i: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "pose_world": _pts(lm.pose_world[i]),
        "pose_visibility": [v if math.isfinite(v) else None for v in lm.pose_visibility[i].tolist()],
        "left_hand": _pts(lm.left_hand[i]) if np.isfinite(lm.left_hand[i]).all() else None,
        "right_hand": _pts(lm.right_hand[i]) if np.isfinite(lm.right_hand[i]).all() else None,
    }
    if lm.pose_image is not None:
        out["pose_image"] = [p[:2] if p is not None else None for p in _pts(lm.pose_image[i])]
    if lm.face is not None:
        out["face"] = _pts(lm.face[i])
    return out


def _worst(js: dict[str, Any], py: dict[str, Any]) -> float:
    """The largest |JS − Python| over every dim of every frame; asserts everything else equal."""
    assert js["clamped"] == py["clamped"]
    assert js["degenerate"] == py["degenerate"]
    assert js["fallback_axes"] == py["fallback_axes"]
    worst = 0.0
    for a, b in zip(js["frames"], py["frames"], strict=True):
        assert a["tracking"] == b["tracking"]
        assert sorted(a["values"]) == sorted(b["values"])
        worst = max([worst, *(abs(a["values"][k] - b["values"][k]) for k in b["values"])])
    return worst


@pytest.fixture(scope="module")
def kit() -> Any:
    ex = ProcessExecutor([str(shutil.which("node")), str(KIT)], timeout=60)
    yield ex
    ex.close()


def _both(kit: Any, inp: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    inp = json.loads(json.dumps(inp))  # what JSON carries, for both
    out = kit("encoder.landmarks", inp)
    assert out.error is None and out.crash is None, out
    return out.result, encode_frames(inp)


@pytest.mark.parametrize("mirrored", ["report", "flip"])
def test_js_equals_python_on_the_signer_recording(kit: Any, mirrored: str) -> None:
    lm = read_pose_file(SIGNER).landmarks
    cal = landmarks_to_vectors(lm).calibration.calibration
    inp = {"frames": [_frame(lm, i) for i in range(lm.batch)], "mirrored": mirrored,
           "calibration": {k: getattr(cal, k) for k in ("hand_length", "torso_length", "arm_length", "shoulder_width")}}
    js, py = _both(kit, inp)
    assert len(py["frames"]) == lm.batch >= 40
    assert sum(f["tracking"]["hand_r"] == "tracked" for f in py["frames"]) > 10  # the hands are really compared
    worst = _worst(js, py)
    print(f"signer ({mirrored}): {lm.batch} frames, max |JS - Python| = {worst:.3g}")
    assert worst <= TOLERANCE


def test_js_equals_python_on_noisy_ground_truth_with_failures(kit: Any) -> None:
    rng = np.random.default_rng(2323)
    n = 120
    lm = noise(render(random_vectors(rng, n), view_yaw_deg=rng.uniform(-60, 60, n)).landmarks, rng,
               xy=0.004, depth=0.012)
    frames = [_frame(lm, i) for i in range(n)]
    for i, f in enumerate(frames):  # a failure mode in every third frame
        kind = (i // 3) % 5
        if i % 3:
            continue
        if kind == 0:
            f["left_hand"], f["right_hand"] = f["right_hand"], f["left_hand"]
        elif kind == 1:
            f["pose_visibility"][POSE_POINTS["hip_l"]] = 0.1
        elif kind == 2:
            f["pose_world"] = [None] * 33
        elif kind == 3:
            f["face"] = None
        else:
            f["right_hand"] = [f["right_hand"][0]] * 21
    for f in frames[:40]:  # blendshapes on some frames, one out of range
        f["blendshapes"] = {"jawOpen": float(rng.uniform(0, 1.2)), "mouthSmileLeft": float(rng.uniform(0, 1)),
                            "browInnerUp": float(rng.uniform(0, 1)), "_neutral": 0.1}
    js, py = _both(kit, {"frames": frames})
    assert {"hands_swapped", "body_hips_not_visible", "body_frame", "palm_r"} <= set(py["degenerate"])
    assert "jawOpen" in py["clamped"]
    worst = _worst(js, py)
    print(f"noisy ground truth: {n} frames, max |JS - Python| = {worst:.3g}")
    assert worst <= TOLERANCE


def test_a_wrong_js_value_is_caught(kit: Any) -> None:
    """The comparison can fail: a Python result nudged by 10x the tolerance is told apart."""
    lm = read_pose_file(SIGNER).landmarks
    js, py = _both(kit, {"frames": [_frame(lm, 0)]})
    key = next(iter(py["frames"][0]["values"]))
    py["frames"][0]["values"][key] += 10 * TOLERANCE
    assert _worst(js, py) > TOLERANCE


def test_js_camera_relative_head_equals_python() -> None:
    """Without a body frame the browser sends the head relative to the camera from the face
    matrix, as producers/face.py head_from_face_matrix does (spec §4.4): equal within 1e-9 on
    scaled, translated rotations (MediaPipe's facial transformation matrices)."""
    import subprocess

    from posewire.codec.quaternion import to_matrix
    from posewire.producers.face import head_from_face_matrix

    rng = np.random.default_rng(44)
    q = rng.normal(size=(40, 4)) * np.array([1.0, 0.3, 0.5, 0.2])  # mostly near-frontal heads, some beyond max
    mats = np.zeros((40, 4, 4))
    mats[:, :3, :3] = to_matrix(q / np.linalg.norm(q, axis=1, keepdims=True)) * rng.uniform(0.8, 1.3, (40, 1, 1))
    mats[:, :3, 3] = rng.normal(size=(40, 3)) * 10
    mats[:, 3, 3] = 1.0
    want, clamped = head_from_face_matrix(mats)
    script = """
import { headFromRotation } from './js/posewire/encoder.mjs';
import { faceRotation } from './js/posewire/live.mjs';
let text = ''; for await (const c of process.stdin) text += c;
const head = (data) => headFromRotation(faceRotation({ facialTransformationMatrixes: [{ data }] }));
const out = JSON.parse(text).map(head);
process.stdout.write(JSON.stringify(out));
"""
    column_major = [m.T.reshape(-1).tolist() for m in mats]
    done = subprocess.run([str(shutil.which("node")), "--input-type=module", "-e", script], cwd=ROOT,
                          input=json.dumps(column_major), capture_output=True, text=True, timeout=60, check=True)
    got = json.loads(done.stdout)
    np.testing.assert_allclose([g[0] for g in got], want, rtol=0, atol=1e-9)
    assert [g[1] for g in got] == clamped.tolist() and any(clamped) and not all(clamped)


def test_js_iris_gaze_equals_python() -> None:
    """The browser's gaze from the irises (js/posewire/live.mjs irisGaze) is producers/face.py
    iris_gaze1 (spec §7.3): equal within 1e-9 on synthetic eyes under random head rotations,
    clips included."""
    import subprocess

    from posewire.codec.quaternion import to_matrix
    from posewire.producers.face import EYE_MESH_INDEX, iris_gaze1
    from posewire.producers.landmarks import MEDIAPIPE_TO_Y_UP

    rng = np.random.default_rng(45)
    width, height = 640, 480
    cases, want = [], []
    for _ in range(30):
        mesh = rng.uniform(0.3, 0.7, (478, 3)) * np.array([1.0, 1.0, 0.1])
        for outer, inner, iris in ((33, 133, 468), (263, 362, 473)):  # an eye 30 px wide, the iris inside
            mesh[inner] = mesh[outer] + np.array([0.047, 0.0, 0.0]) * (1 if outer == 33 else -1)
            mesh[iris] = 0.5 * (mesh[outer] + mesh[inner]) + rng.normal(size=3) * np.array([0.01, 0.006, 0.002])
        q = rng.normal(size=4)
        rot = to_matrix(q / np.linalg.norm(q))
        pixels = mesh * np.array([width, height, width])
        eyes = (pixels[EYE_MESH_INDEX] @ MEDIAPIPE_TO_Y_UP).tolist()
        want.append(iris_gaze1(eyes, tuple(tuple(r) for r in rot.tolist())))
        cases.append({"mesh": [{"x": p[0], "y": p[1], "z": p[2]} for p in mesh.tolist()], "rot": rot.tolist()})
    script = """
import { irisGaze } from './js/posewire/live.mjs';
let text = ''; for await (const c of process.stdin) text += c;
process.stdout.write(JSON.stringify(JSON.parse(text).map((c) => irisGaze(c.mesh, 640, 480, c.rot))));
"""
    done = subprocess.run([str(shutil.which("node")), "--input-type=module", "-e", script], cwd=ROOT,
                          input=json.dumps(cases), capture_output=True, text=True, timeout=60, check=True)
    got = json.loads(done.stdout)
    np.testing.assert_allclose([g[0] for g in got], [w[0] for w in want], rtol=0, atol=1e-9)
    assert [g[1] for g in got] == [w[1] for w in want] and any(w[1] for w in want) and not all(w[1] for w in want)
