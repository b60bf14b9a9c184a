"""Vectors of the encoder op ``encoder.landmarks`` (spec §6.10): landmarks -> dims, tracking, report.

Inputs are ground-truth frames (known vectors rendered through the reference avatar by
``posewire.groundtruth.render``), the same with MediaPipe-like noise, real recorded frames
(``tests/data/holistic_signer.pose``, MediaPipe Holistic on a signer) and one case for each
failure mode the reference encoder reports (spec §4.1–§4.6 producer checks). Coordinates
are written with 9 significant digits; the expected results are the reference encoder's
(``posewire.conformance.ops_encoder``) on exactly the written input.

Tolerance (spec §6.10): 1e-7 on every normalized value. The maths is plain IEEE arithmetic
plus ``sin``, ``cos``, ``atan2``, ``asin`` and ``sqrt``, whose last-bit differences between
libraries are amplified at most ~1e3-fold by the torso solve and the finger angles; 1e-7 of
a dim's range is far below anything visible and far above that.

Run: python spec/conformance/tools/gen_encoder_vectors.py  (rewrites encoder.json)
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from posewire.codec.errors import PosewireError
from posewire.codec.registry import ARKIT_CHANNELS, REGISTRY
from posewire.conformance.ops_encoder import encode_frames
from posewire.groundtruth import noise, random_vectors, render
from posewire.producers.landmarks import POSE_POINTS, HolisticLandmarks, landmarks_to_vectors
from posewire.producers.poseformat import read_pose_file

OUT = Path(__file__).resolve().parent.parent
ROOT = OUT.parent.parent
SIGNER = ROOT / "tests" / "data" / "holistic_signer.pose"
TOLERANCE = 1e-7


def _num(x: float) -> float:
    return float(f"{x:.9g}")


def _pts(a: np.ndarray, keep_z: bool = True) -> list[Any]:
    out: list[Any] = []
    for p in a.tolist():
        if not all(math.isfinite(c) for c in p):
            out.append(None)
        else:
            out.append([_num(c) for c in (p if keep_z else p[:2])])
    return out


def frame(lm: HolisticLandmarks, i: int, *, blendshapes: Any = "absent", image: bool = True) -> dict[str, Any]:
    """Frame ``i`` of ``lm`` as the op's JSON frame (NaN points -> null)."""
    hand_l, hand_r = lm.left_hand[i], lm.right_hand[i]
    out: dict[str, Any] = {
        "pose_world": _pts(lm.pose_world[i]),
        "pose_visibility": [_num(v) if math.isfinite(v) else None for v in lm.pose_visibility[i].tolist()],
        "left_hand": _pts(hand_l) if np.isfinite(hand_l).all() else None,
        "right_hand": _pts(hand_r) if np.isfinite(hand_r).all() else None,
    }
    if image and lm.pose_image is not None:
        out["pose_image"] = _pts(lm.pose_image[i], keep_z=False)
    if lm.pose_in_frame is not None:
        out["pose_in_frame"] = [bool(b) for b in lm.pose_in_frame[i].tolist()]
    if lm.face is not None:
        out["face"] = _pts(lm.face[i])
    if blendshapes != "absent":
        out["blendshapes"] = blendshapes
    return out


cases: list[dict[str, Any]] = []


def case(id_: str, rule: str, inp: dict[str, Any], *, error: str | None = None) -> None:
    c: dict[str, Any] = {"id": id_, "op": "encoder.landmarks", "rule": rule, "input": inp}
    try:
        result = encode_frames(json.loads(json.dumps(inp)))
    except PosewireError as exc:
        assert exc.code == error, (id_, exc.code, error)
        c["expect_error"] = exc.code
    else:
        assert error is None, (id_, "expected an error")
        c["expect"] = result
        c["tolerance"] = TOLERANCE
    cases.append(c)


def cut(lm: HolisticLandmarks, i: int, **arrays: np.ndarray | None) -> HolisticLandmarks:
    """Frame ``i`` alone, with any array replaced."""
    def one(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else a[i:i + 1].copy()

    base = {"pose_world": one(lm.pose_world), "pose_visibility": one(lm.pose_visibility),
            "left_hand": one(lm.left_hand), "right_hand": one(lm.right_hand), "face": one(lm.face),
            "hand_scale": one(lm.hand_scale), "pose_image": one(lm.pose_image),
            "pose_in_frame": None if lm.pose_in_frame is None else lm.pose_in_frame[i:i + 1].copy()}
    base.update(arrays)
    return HolisticLandmarks(**base)  # type: ignore[arg-type]


def blend(rng: np.random.Generator, n: int = 8) -> dict[str, float]:
    names = rng.choice([c for c in ARKIT_CHANNELS if c != "tongueOut"], size=n, replace=False)
    return {str(k): _num(float(w)) for k, w in zip(names, rng.uniform(0.0, 1.0, n), strict=True)}


# ---------------------------------------------------------------------------- ground truth
rng = np.random.default_rng(923)
vec = random_vectors(rng, 12)
vec[0] = [d.row.default for d in REGISTRY.dimensions]  # the neutral pose
zero = [REGISTRY.index(i) for i in ("b_yaw", "b_pitch", "b_roll", "h_yaw", "h_pitch", "h_roll")]
vec[1, zero] = 0.0
view = rng.uniform(-40, 40, 12)
view[:2] = 0.0
gt = render(vec, view_yaw_deg=view).landmarks
R_GT = ("§6.10, §4.1–§4.5: ground truth rendered through the reference avatar (posewire.groundtruth): "
        "arm, palm, fingers, head and body dims and tracking of the reference encoder, reference calibration")
case("gt-neutral", R_GT, {"frames": [frame(gt, 0)]})
case("gt-upright-facing", R_GT, {"frames": [frame(gt, 1)]})
case("gt-random-4", R_GT, {"frames": [frame(gt, i) for i in range(2, 6)]})
case("gt-random-4-blendshapes", R_GT + "; face and mouth from ARKit blendshapes (§4.6, m_tongue not estimated)",
     {"frames": [frame(gt, i, blendshapes=blend(rng)) for i in range(6, 10)]})
case("gt-no-pose-image", R_GT + "; without pose_image the hands are checked against the pose wrists' order",
     {"frames": [frame(gt, i, image=False) for i in (10, 11)]})
case("gt-calibrated", R_GT + "; a fixed calibration of another body (§4.1 units L = 2·r·d)",
     {"frames": [frame(gt, i) for i in (3, 4)],
      "calibration": {"hand_length": 0.2, "torso_length": 0.5, "arm_length": 0.62, "shoulder_width": 0.4}})

# ---------------------------------------------------------------------------- noisy
noisy = noise(gt, np.random.default_rng(24), xy=0.002, depth=0.006)
R_NOISE = "§6.10: ground truth with MediaPipe-like noise (2 mm in the image plane, 6 mm in depth)"
case("noisy-6", R_NOISE, {"frames": [frame(noisy, i) for i in range(6)]})
noisier = noise(gt, np.random.default_rng(25), xy=0.006, depth=0.02)
case("noisy-strong-6", R_NOISE.replace("2 mm", "6 mm").replace("6 mm in depth", "20 mm in depth"),
     {"frames": [frame(noisier, i) for i in range(6, 12)]})

# ---------------------------------------------------------------------------- real recording
signer = read_pose_file(SIGNER).landmarks
cal = landmarks_to_vectors(signer).calibration.calibration
signer_cal = {k: (None if getattr(cal, k) is None else _num(float(getattr(cal, k))))
              for k in ("hand_length", "torso_length", "arm_length", "shoulder_width")}
picks = np.linspace(0, signer.batch - 1, 8).astype(int).tolist()
R_REAL = ("§6.10: real MediaPipe Holistic frames of a signer (tests/data/holistic_signer.pose, MIT), "
          "with the calibration estimated from the whole recording")
case("real-signer-8", R_REAL, {"frames": [frame(signer, i) for i in picks], "calibration": signer_cal})
case("real-signer-reference-cal", R_REAL.replace("with the calibration estimated from the whole recording",
                                                 "with the reference calibration"),
     {"frames": [frame(signer, i) for i in picks[:3]]})

# ---------------------------------------------------------------------------- failure modes
base = noisy
P = POSE_POINTS


def mutated(i: int, **arrays: np.ndarray | None) -> dict[str, Any]:
    return frame(cut(base, i, **arrays), 0)


flip = np.array([-1.0, 1.0, 1.0])
# §2.2: a selfie image flipped without swapping labels; reported, or un-mirrored with "flip"
selfie = cut(base, 2, pose_world=base.pose_world[2:3] * flip, left_hand=base.left_hand[2:3] * flip,
             right_hand=base.right_hand[2:3] * flip, face=base.face[2:3] * flip,  # type: ignore[index]
             pose_image=base.pose_image[2:3] * flip)  # type: ignore[index]
case("fail-mirrored-report", "§2.2: a mirrored image (nose behind the chest) is counted in degenerate.mirrored",
     {"frames": [frame(selfie, 0)]})
case("fail-mirrored-flip", "§2.2: mirrored \"flip\" negates x first: the selfie encodes like the unmirrored frame",
     {"frames": [frame(selfie, 0)], "mirrored": "flip"})
case("fail-hands-swapped", "§4.3: each hand at the other pose wrist: labels swapped back, degenerate.hands_swapped",
     {"frames": [mutated(3, left_hand=base.right_hand[3:4], right_hand=base.left_hand[3:4])]})
case("fail-hands-swapped-no-image", "§4.3: swapped labels seen from the wrists' left-right order (no pose_image)",
     {"frames": [frame(cut(base, 3, left_hand=base.right_hand[3:4], right_hand=base.left_hand[3:4],
                           pose_image=None), 0)]})
hidden = base.pose_visibility[4:5].copy()
hidden[0, [P["hip_l"], P["hip_r"]]] = 0.2
case("fail-hips-not-visible", "§4.5: hips below the visibility threshold: body lost, chest upright from the "
     "shoulders, degenerate.body_hips_not_visible", {"frames": [mutated(4, pose_visibility=hidden)]})
edge = base.pose_visibility[4:5].copy()
edge[0, [P["hip_l"], P["hip_r"]]] = 0.6
case("hips-at-the-edge", "§4.5: hips at visibility 0.6 (seen only from 0.8): body lost, chest on the camera's up",
     {"frames": [mutated(4, pose_visibility=edge)]})
outside = np.ones((1, 33), dtype=bool)
outside[0, P["hip_l"]] = False
case("fail-hips-out-of-frame", "§4.5: hips visible (0.9+) but one outside the camera's image (pose_in_frame): "
     "body lost, chest on the camera's up, degenerate.body_hips_not_visible",
     {"frames": [mutated(4, pose_in_frame=outside)]})


def on_its_side(a: np.ndarray | None) -> np.ndarray | None:
    """The points of a camera turned 90° about its optical axis: (x, y, z) -> (−y, x, z)."""
    return None if a is None else np.stack([-a[..., 1], a[..., 0], a[..., 2]], axis=-1)


k = picks[2]
case("chest-camera-on-its-side", "§4.5: a signer frame (hips unseen) from a camera turned 90°: the camera's up is "
     "the image axis nearest the guessed trunk (±X here), the chest-relative dims as upright",
     {"frames": [frame(cut(signer, k, pose_world=on_its_side(signer.pose_world[k:k + 1]),
                           left_hand=on_its_side(signer.left_hand[k:k + 1]),
                           right_hand=on_its_side(signer.right_hand[k:k + 1]),
                           face=on_its_side(None if signer.face is None else signer.face[k:k + 1]),
                           pose_image=on_its_side(None if signer.pose_image is None else signer.pose_image[k:k + 1])),
                       0)],
      "calibration": signer_cal})
wrist = base.pose_visibility[5:6].copy()
wrist[0, P["wrist_r"]] = 0.1
no_hand = np.full((1, 21, 3), np.nan)
case("fail-wrist-not-visible", "§4.1, §7.4: a wrist below the visibility threshold, its hand not found: that arm "
     "lost", {"frames": [mutated(5, pose_visibility=wrist, right_hand=no_hand)]})
case("wrist-hidden-hand-found", "§7.4: a wrist below the visibility threshold whose hand was found is in view: "
     "that arm tracked", {"frames": [mutated(5, pose_visibility=wrist)]})
case("visibility-threshold-option", "§6.10: visibility_threshold moves the wrist/hip visibility cut",
     {"frames": [mutated(5, pose_visibility=wrist, right_hand=no_hand)], "visibility_threshold": 0.05})
no_pose = np.full((1, 33, 3), np.nan)
case("fail-hands-only", "§4.2: no body frame: palm in the camera fallback frame (degenerate.palm_camera_frame_*), "
     "arms and body lost, degenerate.body_frame",
     {"frames": [mutated(6, pose_world=no_pose, pose_visibility=np.zeros((1, 33)), face=None, pose_image=None)]})
pose = base.pose_world[7:8].copy()
pose[0, P["shoulder_l"]] = pose[0, P["shoulder_r"]]
case("fail-shoulders-together", "§2.3: a degenerate shoulder line: no body frame", {"frames": [mutated(7, pose_world=pose)]})
pose = base.pose_world[8:9].copy()
mid = 0.5 * (pose[0, P["hip_l"]] + pose[0, P["hip_r"]])
turn = np.radians(150.0)
for k in ("hip_l", "hip_r"):
    d = pose[0, P[k]] - mid
    pose[0, P[k]] = mid + np.array([d[0] * np.cos(turn) + d[2] * np.sin(turn), d[1],
                                    -d[0] * np.sin(turn) + d[2] * np.cos(turn)])
case("fail-body-implausible", "§4.5: hips turned 150° under the chest: degenerate.body_implausible, body lost",
     {"frames": [mutated(8, pose_world=pose)]})
# §4.4: the face's rotation by the rigid fit, relative to the camera's upright frame without body dims: the
# reference shape turned yaw 30°, pitch 10° (in MediaPipe axes) on a frame whose hips are unseen
fit_face = np.full((1, 468, 3), np.nan)
from posewire.codec.euler import head_to_quat  # noqa: E402
from posewire.codec.quaternion import to_matrix  # noqa: E402
from posewire.producers.landmarks import HEAD_REFERENCE, MEDIAPIPE_TO_Y_UP  # noqa: E402

turn = to_matrix(head_to_quat([30.0 / 90.0, 10.0 / 60.0, 0.0]))
for i, x in HEAD_REFERENCE.items():
    y_up = turn.dot(np.array(x)) * 0.01 + np.array([0.0, 0.45, 0.05])
    fit_face[0, i] = MEDIAPIPE_TO_Y_UP.dot(y_up)
case("head-face-fit-upright", "§4.4: the face points of the rigid fit, the reference shape turned yaw 30°, pitch 10°, "
     "in a frame without body dims: h = (1/3, 1/6, 0), whatever the shoulders",
     {"frames": [mutated(4, pose_visibility=hidden, face=fit_face)]})
pose = base.pose_world[9:10].copy()
for s in ("l", "r"):
    pose[0, P[f"elbow_{s}"]] = 0.5 * (pose[0, P[f"shoulder_{s}"]] + pose[0, P[f"wrist_{s}"]])
case("fail-straight-arms", "§4.1 elbow spread: a straight arm has spread 0, counted in spread_straight_arm_*",
     {"frames": [mutated(9, pose_world=pose)]})
hand = base.left_hand[10:11].copy()
hand[0] = hand[0, 0]
case("fail-collapsed-hand", "§4.2: a hand whose points coincide has no palm frame: hand lost, degenerate.palm_*",
     {"frames": [mutated(10, left_hand=hand)]})
fist = vec[1].copy()  # a right hand with every finger folded at the knuckles, read backward in depth
fist[[REGISTRY.index(f"g_{f}_fold_r") for f in ("index", "middle", "ring", "pinky")]] = 1.0
fisted = render(fist[None]).landmarks
hand = fisted.right_hand.copy()
hand[0, :, 2] = 2.0 * hand[0, 0, 2] - hand[0, :, 2]
case("fail-depth-flipped", "§4.3 producer checks: a hand read backward in depth is taken mirrored "
     "(degenerate.hand_depth_flipped_*)", {"frames": [frame(cut(fisted, 0, right_hand=hand), 0)]})
curled = vec[1].copy()  # a right fist whose PIPs bend further than a real PIP (as a camera's fist)
curled[[REGISTRY.index(f"g_{f}_fold_r") for f in ("index", "middle", "ring", "pinky")]] = 0.4
curled[[REGISTRY.index(f"g_{f}_curl_r") for f in ("index", "middle", "ring", "pinky")]] = 1.0
curled[[REGISTRY.index(f"g_{f}_distal_r") for f in ("index", "middle", "ring", "pinky")]] = 0.5
curled_lm = render(curled[None]).landmarks
hand = curled_lm.right_hand.copy()
h = hand[0]
for m_, p_ in ((5, 6), (9, 10), (13, 14), (17, 18)):
    bend_axis = np.cross(h[p_] - h[m_], h[p_ + 1] - h[p_])
    bend_axis /= np.linalg.norm(bend_axis)
    turn = np.radians(30.0)  # each PIP bent 30° past its 110° range: the fold takes the 30°
    for k in (p_ + 1, p_ + 2):
        v = h[k] - h[p_]
        h[k] = h[p_] + v * np.cos(turn) + np.cross(bend_axis, v) * np.sin(turn) + bend_axis * (bend_axis @ v) * (
            1 - np.cos(turn))
case("fist-joint-ranges", "§4.3 \"Joint ranges\": a fist whose PIPs bend 140°, 30° past their range, keeps "
     "curl 1 and its DIP; the fold takes the 30° (48° -> 78°)",
     {"frames": [frame(cut(curled_lm, 0, right_hand=hand), 0)]})
back = vec[1].copy()  # a right hand whose DIPs bend back 40°: 20° beyond a real DIP's hyperextension
for f in ("index", "middle", "ring", "pinky"):
    back[REGISTRY.index(f"g_{f}_fold_r")] = 0.4
    back[REGISTRY.index(f"g_{f}_curl_r")] = -5.0 / 110.0
    back[REGISTRY.index(f"g_{f}_distal_r")] = -40.0 / 90.0
case("hyperextended-joint-ranges", "§4.3 \"Joint ranges\": DIPs bent back 40° and PIPs 5°: the DIP keeps −20°, "
     "the PIP takes the other 20° and keeps −10°, the fold takes the last 15° (48° -> 33°)",
     {"frames": [frame(render(back[None]).landmarks, 0)]})
hand = base.left_hand[0:1].copy()
h = hand[0]
normal = np.cross(h[5] - h[0], h[17] - h[0])
axis = normal / np.linalg.norm(normal)
turn = np.radians(70.0)
for k in (18, 19, 20):
    v = h[k] - h[17]
    h[k] = h[17] + v * np.cos(turn) + np.cross(axis, v) * np.sin(turn) + axis * (axis @ v) * (1 - np.cos(turn))
case("fail-finger-side-clamped", "§4.3: a pinky turned 70° past the side range on a hand seen at an angle is read "
     "again with its depth scaled and sent in range (fingers_depth_repaired_l): a depth repair comes before a side "
     "clamp (finger-side-clamped-palm-facing-camera clamps)", {"frames": [mutated(0, left_hand=hand)]})
case("fail-thumb-roll-unobservable", "§4.3: a straight thumb shows no roll: g_thumb_roll 0, "
     "degenerate.thumb_roll_unobservable_*", {"frames": [frame(gt, 0)]})
far = base.pose_world[1:2].copy()
far[0, P["wrist_r"]] = far[0, P["shoulder_r"]] + np.array([-1.5, 0.0, 0.0])
case("fail-arm-clamped", "§3.1: a hand beyond the arm range is clamped and counted per dim id",
     {"frames": [mutated(1, pose_world=far)]})
case("fail-calibration-fallback", "§4.1: missing distances fall back to the shoulder width (fallback_axes)",
     {"frames": [frame(gt, 2)], "calibration": {"hand_length": None, "torso_length": 0.5, "shoulder_width": 0.38}})
case("fail-blendshapes-clamped", "§4.6: weights outside [0, 1] are clamped and named in clamped",
     {"frames": [frame(gt, 1, blendshapes={"jawOpen": 1.4, "mouthSmileLeft": -0.2, "eyeBlinkLeft": 0.5})]})
case("fail-face-lost", "§3.4.2: blendshapes null = the face model found no face: face and mouth lost",
     {"frames": [frame(gt, 1, blendshapes=None)]})
no_face = cut(base, 2, face=None)
case("no-face", "§4.4: without face points the head is not estimated", {"frames": [frame(no_face, 0)]})
face = base.face[3:4].copy()  # type: ignore[index]
face[0, 152] = np.nan
case("fail-face-point-missing", "§4.4: a missing face point of the head frame: head lost",
     {"frames": [mutated(3, face=face)]})
pose = base.pose_world[4:5].copy()
pose[0, P["elbow_l"]] = np.nan
case("fail-pose-point-missing", "§4.1: a missing elbow: spread not estimated, the hand position still is",
     {"frames": [mutated(4, pose_world=pose)]})

# ---------------------------------------------------------------------------- input errors (§6.5)
good = frame(gt, 1)
R_IN = "§6.5, §6.10: malformed input is a usage error with a stable code"
case("input-pose-count", R_IN + ": 32 pose points is usage.shape",
     {"frames": [{**good, "pose_world": good["pose_world"][:32]}]}, error="usage.shape")
case("input-hand-count", R_IN + ": 20 hand points is usage.shape",
     {"frames": [{**good, "left_hand": good["pose_world"][:20]}]}, error="usage.shape")
case("input-point-length", R_IN + ": a point of 4 numbers is usage.shape",
     {"frames": [{**good, "right_hand": [[0, 0, 0, 0]] * 21}]}, error="usage.shape")
case("input-pose-in-frame-count", R_IN + ": pose_in_frame is 33 booleans (32 is usage.shape)",
     {"frames": [{**good, "pose_in_frame": [True] * 32}]}, error="usage.shape")
R_TYPE = "§6.5 rule 1, §6.10: a value of the wrong JSON type is usage.bad_option (usage.shape only for a wrong length)"
case("input-pose-in-frame-number", R_TYPE + ": a number among pose_in_frame's booleans",
     {"frames": [{**good, "pose_in_frame": [True] * 32 + [1]}]}, error="usage.bad_option")
case("input-frames-not-array", R_TYPE + ": frames that is an object", {"frames": {"0": good}}, error="usage.bad_option")
case("input-visibility-not-array", R_TYPE + ": pose_visibility that is a number",
     {"frames": [{**good, "pose_visibility": 1}]}, error="usage.bad_option")
case("input-point-not-array", R_TYPE + ": a pose point that is a number",
     {"frames": [{**good, "pose_world": [*good["pose_world"][:32], 0.5]}]}, error="usage.bad_option")
elbow = P["elbow_l"]
half_null = [list(p) for p in good["pose_world"]]
half_null[elbow] = [half_null[elbow][0], None, half_null[elbow][2]]
case("input-point-null-coordinate-is-missing", "§6.10: a point with a missing (null) coordinate is a missing point, "
     "as if it were null", {"frames": [{**good, "pose_world": half_null}]})
assert cases[-1]["expect"] == encode_frames(json.loads(json.dumps(
    {"frames": [{**good, "pose_world": [None if i == elbow else p for i, p in enumerate(good["pose_world"])]}]})))
case("input-no-frames", R_IN + ": no frames is usage.shape", {"frames": []}, error="usage.shape")
case("input-unknown-frame-key", R_IN + ": an unknown frame key is usage.bad_option",
     {"frames": [{**good, "hands": None}]}, error="usage.bad_option")
case("input-missing-visibility", R_IN + ": pose_visibility is required (usage.bad_option)",
     {"frames": [{k: v for k, v in good.items() if k != "pose_visibility"}]}, error="usage.bad_option")
case("input-mirrored", R_IN + ": mirrored is \"report\" or \"flip\" (usage.bad_option)",
     {"frames": [good], "mirrored": "yes"}, error="usage.bad_option")
case("input-unknown-blendshape", R_IN + ": an unknown ARKit name is usage.unknown_id",
     {"frames": [{**good, "blendshapes": {"jawOpen": 0.2, "smile": 0.5}}]}, error="usage.unknown_id")
case("input-calibration-unusable", "§4.1: no valid distance and no shoulder width is usage.calibration",
     {"frames": [good], "calibration": {"hand_length": None}}, error="usage.calibration")

# ---------------------------------------------------------------------------- the stranger's readings (§6.10, §6.10.1)
from posewire.conformance import operations  # noqa: E402

_CHECKED = operations()["encoder.landmarks"]  # with the §6.5 input rule, as a kit runs it


def checked_case(id_: str, rule: str, inp: dict[str, Any], *, error: str | None = None) -> None:
    """:func:`case` through the kit's checked op (§6.5 rules 1–3 before the op's own checks)."""
    c: dict[str, Any] = {"id": id_, "op": "encoder.landmarks", "rule": rule, "input": inp}
    try:
        result = _CHECKED(json.loads(json.dumps(inp)))
    except PosewireError as exc:
        assert exc.code == error, (id_, exc.code, error)
        c["expect_error"] = exc.code
    else:
        assert error is None, (id_, "expected an error")
        c["expect"] = result
        c["tolerance"] = TOLERANCE
    cases.append(c)


lean = frame(cut(gt, 1, face=None, pose_image=None), 0)  # a small valid frame for the input errors
R_G = "§6.10 (the stranger's gaps)"
# G2: only pose_image points may be 2 numbers long
checked_case("input-pose-point-two-numbers", R_G + ": a pose_world point of 2 numbers is usage.shape (not missing)",
             {"frames": [{**lean, "pose_world": [lean["pose_world"][0][:2], *lean["pose_world"][1:]]}]},
             error="usage.shape")
hand2 = [list(p) for p in frame(gt, 1)["right_hand"]]
checked_case("input-hand-point-two-numbers", R_G + ": a hand point of 2 numbers is usage.shape (not missing)",
             {"frames": [{**lean, "right_hand": [hand2[0][:2], *hand2[1:]]}]}, error="usage.shape")
swapped_frame = mutated(3, left_hand=base.right_hand[3:4], right_hand=base.left_hand[3:4], face=None)
deep = {**swapped_frame, "pose_image": [[*p, 10.0] for p in swapped_frame["pose_image"]]}
checked_case("pose-image-z-not-read", R_G + ": pose_image points of 3 numbers: the z is never read (the 2-D "
             "distances of step 4 swap the hands as without it)", {"frames": [deep]})
assert cases[-1]["expect"] == _CHECKED(json.loads(json.dumps({"frames": [swapped_frame]})))
assert cases[-1]["expect"]["degenerate"].get("hands_swapped") == 1
# G3: with pose_image and no present hand nothing is swapped
no_hands = mutated(3, left_hand=no_hand, right_hand=no_hand, face=None)
assert "pose_image" in no_hands
checked_case("pose-image-no-hand-present", R_G + ": with pose_image and neither hand present the labels are not "
             "swapped (no hands_swapped)", {"frames": [no_hands]})
# G4: pose_image null is pose_image absent: the 3-D wrists' order decides
no_image = frame(cut(base, 3, left_hand=base.right_hand[3:4], right_hand=base.left_hand[3:4], pose_image=None,
                     face=None), 0)
checked_case("input-pose-image-null-is-absent", R_G + ": pose_image null is as if absent (the wrists' order swaps "
             "the hands back)", {"frames": [{**no_image, "pose_image": None}]})
assert cases[-1]["expect"] == _CHECKED(json.loads(json.dumps({"frames": [no_image]})))
assert cases[-1]["expect"]["degenerate"].get("hands_swapped") == 1
# G5: m_tongue's column takes part in the joint solve; m_tongue itself is left out; tongueOut clamps are counted
checked_case("blendshapes-tongue-in-the-solve", R_G + ": tongueOut is solved jointly (m_tongue + = tongueOut 1, "
             "jawOpen 0.2): tongueOut 0.8, jawOpen 0.5 give m_jaw 0.34; m_tongue is left out; tongueOut 1.3 is "
             "clamped and counted",
             {"frames": [{**lean, "blendshapes": {"tongueOut": 0.8, "jawOpen": 0.5}},
                         {**lean, "blendshapes": {"tongueOut": 1.3, "jawOpen": 0.5}}]})
assert abs(cases[-1]["expect"]["frames"][0]["values"]["m_jaw"] - 0.34) < 1e-12
# G12: options and weights
checked_case("input-mirrored-null", R_G + ": mirrored null is usage.bad_option (§6.5 rule 1: not nullable)",
             {"frames": [lean], "mirrored": None}, error="usage.bad_option")
checked_case("input-visibility-threshold-null", R_G + ": visibility_threshold null is usage.bad_option",
             {"frames": [lean], "visibility_threshold": None}, error="usage.bad_option")
checked_case("input-visibility-threshold-above-one", R_G + ": visibility_threshold 1.5 is usage.out_of_range "
             "(§6.5 rule 3, [0, 1])", {"frames": [lean], "visibility_threshold": 1.5}, error="usage.out_of_range")
checked_case("input-visibility-threshold-negative", R_G + ": visibility_threshold −0.1 is usage.out_of_range",
             {"frames": [lean], "visibility_threshold": -0.1}, error="usage.out_of_range")
checked_case("input-blendshape-weight-null", R_G + ": a blendshape weight null is usage.bad_option",
             {"frames": [{**lean, "blendshapes": {"jawOpen": None}}]}, error="usage.bad_option")
checked_case("blendshapes-neutral-value-a-number", R_G + ": _neutral's value is not used, but it is a number "
             "(§6.5 rule 1): null is usage.bad_option",
             {"frames": [{**lean, "blendshapes": {"_neutral": None, "jawOpen": 0.3}}]}, error="usage.bad_option")
# G12: the order of the op's own checks (rule 4), each pair decided by the first in §6.10's order
R_O = "§6.10 order of the checks"
bad_pose = lean["pose_world"][:32]
checked_case("order-encoder-rule-3-before-op", R_O + ": visibility_threshold out of range before mirrored's value",
             {"frames": [lean], "mirrored": "yes", "visibility_threshold": 2}, error="usage.out_of_range")
checked_case("order-encoder-row-before-calibration-keys", R_O + ": the row's keys, then calibration's",
             {"frames": [lean], "calibration": {"hand_length": "x"}, "visibility_threshold": 2},
             error="usage.out_of_range")
checked_case("order-encoder-empty-frames-before-mirrored", R_O + ": no frames before mirrored's value",
             {"frames": [], "mirrored": "yes"}, error="usage.shape")
checked_case("order-encoder-mirrored-before-calibration", R_O + ": mirrored's value before the calibration",
             {"frames": [lean], "mirrored": "yes", "calibration": {"hand_length": None}}, error="usage.bad_option")
checked_case("order-encoder-calibration-before-frames", R_O + ": an unusable calibration before any frame's content",
             {"frames": [{**lean, "pose_world": bad_pose}], "calibration": {"hand_length": None}},
             error="usage.calibration")
checked_case("order-encoder-frame-by-frame", R_O + ": frame 0 completely (its blendshapes too) before frame 1",
             {"frames": [{**lean, "blendshapes": {"smile": 0.5}}, {**lean, "pose_world": bad_pose}]},
             error="usage.unknown_id")
checked_case("order-encoder-points-before-blendshapes", R_O + ": a frame's points before its blendshapes",
             {"frames": [{**lean, "blendshapes": {"smile": 0.5}, "right_hand": [[0.0, 0.0]] * 21}]},
             error="usage.shape")
checked_case("order-encoder-pose-in-frame-before-hands", R_O + ": pose_in_frame before the hands",
             {"frames": [{**lean, "pose_in_frame": [True] * 32 + [1], "left_hand": lean["pose_world"][:20]}]},
             error="usage.bad_option")
checked_case("order-encoder-count-before-points", R_O + ": a list's count before its points",
             {"frames": [{**lean, "pose_world": [*lean["pose_world"][:31], "x"]}]}, error="usage.shape")
checked_case("order-encoder-point-length-before-coordinates", R_O + ": a point's length before its coordinates",
             {"frames": [{**lean, "pose_world": [[True, 0.0, 0.0, 0.0], *lean["pose_world"][1:]]}]},
             error="usage.shape")
checked_case("order-encoder-visibility-count-before-entries", R_O + ": pose_visibility's count before its entries",
             {"frames": [{**lean, "pose_visibility": [*lean["pose_visibility"][:31], "x"]}]}, error="usage.shape")
checked_case("order-encoder-blendshape-entries-in-order", R_O + ": blendshape entries in the object's order, "
             "each name then weight (a null weight before a later unknown name)",
             {"frames": [{**lean, "blendshapes": {"jawOpen": None, "smile": 0.5}}]}, error="usage.bad_option")


# ---------------------------------------------------------------------------- constructed hands (exact)
def built_hand(side: str, *, index_turn: float = 0.0, pinky_turn: float = 0.0,
               middle: tuple[float, float, float] = (0.0, 0.095, 0.0)) -> list[list[float]]:
    """A right (or, mirrored, left) hand in MediaPipe axes, wrist at the origin, its palm frame turned
    exactly 180° about the camera's z (R = diag(−1, −1, 1): w = 0): canonical local (l_x, l_y, l_z) →
    MediaPipe (−l_x, l_y, −l_z) for the right hand, (l_x, l_y, −l_z) for the left. Fingers bent in planes
    at their metacarpal + σ + turn (degrees), the palm facing the camera (depth repair cannot turn them)."""
    local = [(0.0, 0.0, 0.0), (0.02, 0.02, 0.0), (0.04, 0.045, 0.01), (0.055, 0.07, 0.015), (0.065, 0.09, 0.02)]
    knuckles = {"index": (0.022, 0.09, 0.0), "middle": middle, "ring": (-0.018, 0.088, 0.0),
                "pinky": (-0.034, 0.078, 0.0)}
    splay = {"index": 20.0, "middle": 10.0, "ring": 10.0, "pinky": 5.0}
    turns = {"index": index_turn, "middle": 0.0, "ring": 0.0, "pinky": pinky_turn}
    bends = {"index": (20.0, 30.0, 10.0), "middle": (25.0, 20.0, 10.0), "ring": (25.0, 20.0, 10.0),
             "pinky": (30.0, 40.0, 20.0)}
    for f, (mx, my, mz) in knuckles.items():
        heading = math.atan2(-mx, my) + math.radians(splay[f] + turns[f])  # from +Y toward the pinky
        d = np.array([-math.sin(heading), math.cos(heading), 0.0])
        z = np.array([0.0, 0.0, 1.0])
        p = np.array([mx, my, mz])
        local.append(tuple(p))
        bend = 0.0
        for length, b in zip((0.04, 0.025, 0.02), bends[f], strict=True):
            bend += math.radians(b)
            p = p + length * (math.cos(bend) * d + math.sin(bend) * z)
            local.append(tuple(p))
    sx = -1.0 if side == "r" else 1.0
    return [[_num(sx * x), _num(y), _num(-z)] for x, y, z in local]


hands_only = {"pose_world": [None] * 33, "pose_visibility": [0.0] * 33}
checked_case("hands-only-palm-half-turn", "§4.2, §3.3: both palms turned exactly 180° about the camera's z "
             "(w = 0: a trace-only matrix → quaternion divides by 0; the stable branch of the largest of "
             "4w², 4x², 4y², 4z²) are clamped and counted: w_q_l (|v| > 0.98), w_q_r (|v| > 0.98)",
             {"frames": [{**hands_only, "left_hand": built_hand("l"), "right_hand": built_hand("r")}]})
assert {"w_q_l (|v| > 0.98)", "w_q_r (|v| > 0.98)"} <= set(cases[-1]["expect"]["clamped"])
checked_case("finger-side-clamped-palm-facing-camera", "§4.3: a pinky turned 70° toward the pinky and an index 60° "
             "toward the thumb of hands facing the camera (depth axis = palm normal: no depth scale turns them) "
             "keep their bends, sides on the rails ±1: fingers_side_clamped_l, _r = 2 and the side ids counted",
             {"frames": [{**hands_only, "left_hand": built_hand("l", index_turn=-60.0, pinky_turn=70.0),
                          "right_hand": built_hand("r", index_turn=-60.0, pinky_turn=70.0)}]})
assert cases[-1]["expect"]["degenerate"].get("fingers_side_clamped_r") == 2
assert cases[-1]["expect"]["degenerate"].get("fingers_side_clamped_l") == 2
assert "fingers_depth_repaired_r" not in cases[-1]["expect"]["degenerate"]
checked_case("palm-degenerate-right-near-parallel", "§4.2: a right hand whose wrist → middle knuckle lies 6e−7 rad "
             "from its palm normal (|f × m| < 1e−6·|f|·|m|, though reject(m, f) is 2.9e−9 long): palm frame "
             "degenerate, hand lost, degenerate.palm_r",
             {"frames": [{**hands_only, "left_hand": built_hand("l"),
                          "right_hand": built_hand("r", middle=(0.0, 5.7e-8, -0.095))}]})
assert cases[-1]["expect"]["degenerate"].get("palm_r") == 1

doc = {
    "section": "§6.10",
    "title": "The encoder op: MediaPipe landmarks (and blendshapes) -> dims, tracking states, report counts",
    "cases": cases,
}
# one case per line (the landmark arrays are long)
lines = ",\n".join("  " + json.dumps(c, separators=(",", ":")) for c in cases)
(OUT / "encoder.json").write_text(f'{{"section": {json.dumps(doc["section"])}, "title": {json.dumps(doc["title"])},\n'
                                  f' "cases": [\n{lines}\n ]}}\n')
print(f"{len(cases)} cases -> {OUT / 'encoder.json'}")
