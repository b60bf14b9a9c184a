"""Landmarks -> vector (posewire.producers.landmarks): hand-computed synthetic cases and laws."""

from __future__ import annotations

import numpy as np
import pytest
from fingerutil import sent_bends_deg
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from posewire.codec.calibration import REFERENCE_CALIBRATION, units
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import LOWER, UPPER, mirror
from posewire.producers.hand import finger_angles
from posewire.producers.landmarks import (
    MEDIAPIPE_TO_Y_UP,
    HolisticLandmarks,
    LandmarkCalibration,
    landmarks_to_vectors,
)

F64 = NDArray[np.float64]
REF = LandmarkCalibration(REFERENCE_CALIBRATION, units(REFERENCE_CALIBRATION))

# MediaPipe pose left/right pairs (subject's own sides) and the face points used here.
POSE_PAIRS = [(1, 4), (2, 5), (3, 6), (7, 8), (9, 10), (11, 12), (13, 14), (15, 16), (17, 18), (19, 20),
              (21, 22), (23, 24), (25, 26), (27, 28), (29, 30), (31, 32)]
POSE_PERM = np.arange(33)
for _a, _b in POSE_PAIRS:
    POSE_PERM[_a], POSE_PERM[_b] = _b, _a
FACE_PERM = np.arange(468)
FACE_PERM[33], FACE_PERM[263] = 263, 33
M = np.diag([-1.0, 1.0, 1.0])  # sagittal reflection in body coordinates (spec §3.2)


def v(dim_id: str, vec: F64) -> float:
    return float(vec[..., REGISTRY.index(dim_id)].reshape(-1)[0])


def rot_x(deg: float) -> F64:
    t = np.radians(deg)
    return np.array([[1, 0, 0], [0, np.cos(t), -np.sin(t)], [0, np.sin(t), np.cos(t)]])


def rot_y(deg: float) -> F64:
    t = np.radians(deg)
    return np.array([[np.cos(t), 0, np.sin(t)], [0, 1, 0], [-np.sin(t), 0, np.cos(t)]])


def right_hand(*, fold: float = 0.0, pip: float = 0.0, dip: float = 0.0, spread: float = 0.0) -> F64:
    """A right hand (21, 3) in its local frame = body frame at identity: fingers +Y,
    palm normal +Z (forward), thumb +X. Each finger turns its relaxed splay (the side
    row's ``neutral_deg``) toward the pinky from its metacarpal (wrist → MCP) in the palm
    plane (side 0, spec §4.3) and bends about its own lateral axis toward +Z by the angles
    (degrees); ``spread`` turns the index further toward the thumb (−side)."""
    pts = np.zeros((21, 3))
    bases = {5: 0.022, 9: 0.0, 13: -0.02, 17: -0.038}
    for (mcp, x), finger in zip(bases.items(), ("index", "middle", "ring", "pinky"), strict=True):
        pts[mcp] = (x, 0.09, 0.0)
        direction = pts[mcp] / np.linalg.norm(pts[mcp])
        turn = (spread if mcp == 5 else 0.0) - (REGISTRY.by_id[f"g_{finger}_side_r"].row.neutral_deg or 0.0)
        if turn:
            t = np.radians(turn)
            c, s_ = np.cos(t), np.sin(t)
            direction = np.array([c * direction[0] + s_ * direction[1], -s_ * direction[0] + c * direction[1], 0.0])
        lateral = np.cross(direction, [0.0, 0.0, 1.0])
        angle = 0.0
        for k, (bend, length) in enumerate(((fold, 0.045), (pip, 0.028), (dip, 0.022))):
            angle += bend
            t = np.radians(angle)
            bent = direction * np.cos(t) + np.cross(lateral, direction) * np.sin(t)
            pts[mcp + k + 1] = pts[mcp + k] + length * bent
    rest = np.array([0.6, 0.8, 0.0])  # thumb at its rest direction (spec §4.3), in the palm plane
    pts[1] = (0.02, 0.02, 0.0)
    for k in (2, 3, 4):
        pts[k] = pts[k - 1] + 0.035 * rest
    return pts


def body_points(*, wrist_r: F64 | None = None, wrist_l: F64 | None = None,
                elbow_r: F64 | None = None, elbow_l: F64 | None = None) -> F64:
    """33 pose points in the body frame (+X subject's left, +Y up, +Z forward; neck at 0)."""
    pts = np.zeros((33, 3))
    pts[0] = (0.0, 0.2, 0.1)  # nose
    pts[11], pts[12] = (0.18, 0.0, 0.0), (-0.18, 0.0, 0.0)
    pts[23], pts[24] = (0.1, -0.5, 0.0), (-0.1, -0.5, 0.0)
    pts[13] = (0.2, -0.28, 0.0) if elbow_l is None else elbow_l
    pts[14] = (-0.2, -0.28, 0.0) if elbow_r is None else elbow_r
    pts[15] = (0.2, -0.55, 0.05) if wrist_l is None else wrist_l
    pts[16] = (-0.2, -0.55, 0.05) if wrist_r is None else wrist_r
    return pts


def face_points(yaw: float = 0.0) -> F64:
    face = np.full((468, 3), np.nan)
    rot = rot_y(yaw)
    head = np.array([0.0, 0.25, 0.05])
    for idx, p in ((33, (-0.045, 0.03, 0.0)), (263, (0.045, 0.03, 0.0)), (10, (0.0, 0.1, 0.0)),
                   (152, (0.0, -0.08, 0.0))):
        face[idx] = head + rot @ np.array(p)
    return face


def to_mediapipe(body: F64, rotation: F64 | None = None, offset: F64 | None = None) -> F64:
    """Body-frame points (..., 3) -> MediaPipe camera axes (x right, y down, z away)."""
    world = body if rotation is None else body @ rotation.T
    if offset is not None:
        world = world + offset
    out: F64 = world @ MEDIAPIPE_TO_Y_UP  # the conversion is its own inverse
    return out


def make(pose: F64, left: F64, right: F64, face: F64 | None = None, *, rotation: F64 | None = None,
         offset: F64 | None = None) -> HolisticLandmarks:
    def mp(a: F64) -> F64:
        return to_mediapipe(a, rotation, offset)[None]
    return HolisticLandmarks(
        pose_world=mp(pose), pose_visibility=np.ones((1, 33)), left_hand=mp(left), right_hand=mp(right),
        face=None if face is None else mp(face), hand_scale=np.ones(1))


def mirrored_hand(hand_r: F64) -> F64:
    return hand_r @ M


def test_flat_open_right_hand_is_identity_and_straight() -> None:
    wrist = np.array([-0.2, -0.1, 0.3])
    hand = right_hand() + wrist
    out = landmarks_to_vectors(make(body_points(wrist_r=wrist), mirrored_hand(right_hand()) + wrist @ M, hand),
                               calibration=REF)
    vec = out.vectors
    for axis in "xyz":
        assert v(f"w_q{axis}_r", vec) == pytest.approx(0.0, abs=1e-9)
    for finger in ("thumb", "index", "middle", "ring", "pinky"):
        for kind in ("curl", "fold", "side", "distal"):
            assert v(f"g_{finger}_{kind}_r", vec) == pytest.approx(0.0, abs=1e-9), (finger, kind)
    assert v("g_thumb_roll_r", vec) == 0.0
    # the mirrored left hand gives the same stored values (spec §3.2)
    for dim in REGISTRY.dimensions:
        if dim.id.endswith("_r") and dim.id[0] in "wg":
            assert v(dim.id[:-2] + "_l", vec) == pytest.approx(v(dim.id, vec), abs=1e-9)


def test_fist_curls_and_folds_high() -> None:
    hand = right_hand(fold=80.0, pip=95.0, dip=65.0)
    vec = landmarks_to_vectors(make(body_points(), mirrored_hand(hand), hand), calibration=REF).vectors
    # spec §4.3: each joint its own bend; a PIP of 95° is within its 110°, so nothing passes on
    assert v("g_middle_fold_r", vec) == pytest.approx(80 / 120, abs=1e-6)  # metacarpal along +Y
    for finger in ("index", "middle", "ring", "pinky"):
        # the other metacarpals fan out from the wrist by up to 23°: fold is measured from them
        assert v(f"g_{finger}_fold_r", vec) == pytest.approx(80 / 120, abs=0.01)
        assert v(f"g_{finger}_curl_r", vec) == pytest.approx(95 / 110, abs=1e-6)
        assert v(f"g_{finger}_distal_r", vec) == pytest.approx(65 / 90, abs=1e-6)
        assert v(f"g_{finger}_side_r", vec) == pytest.approx(0.0, abs=1e-6)


def test_a_camera_fist_passes_its_pip_excess_to_the_fold() -> None:
    # spec §4.3 "Joint ranges": a PIP seen at 150° (MediaPipe's fists) keeps 110°, the fold
    # takes the other 40°; the DIP's 100° keeps 90° and its 10° goes to the PIP first
    hand = right_hand(fold=40.0, pip=140.0, dip=100.0)
    vec = landmarks_to_vectors(make(body_points(), mirrored_hand(hand), hand), calibration=REF).vectors
    assert v("g_middle_fold_r", vec) == pytest.approx(80 / 120, abs=1e-6)
    assert v("g_middle_curl_r", vec) == pytest.approx(1.0, abs=1e-9)
    assert v("g_middle_distal_r", vec) == pytest.approx(1.0, abs=1e-9)


@settings(max_examples=60)
@given(fold=st.floats(-20.0, 60.0), pip=st.floats(-150.0, 170.0), dip=st.floats(-150.0, 150.0))
def test_each_joint_takes_what_the_one_beyond_it_cannot(fold: float, pip: float, dip: float) -> None:
    # law (spec §4.3 "Joint ranges"): the last and (where the DIP is in range) middle
    # phalanges keep their directions, every bend sent lies within its range, and a finger
    # within its ranges is sent as measured
    hand = right_hand(fold=fold, pip=pip, dip=dip)[None]
    angles = finger_angles(hand, side="r")
    for finger in ("index", "middle", "ring", "pinky"):
        splay = REGISTRY.by_id[f"g_{finger}_side_r"].row.neutral_deg or 0.0
        assert angles[f"g_{finger}_side"][0] == pytest.approx(splay, abs=1e-6), finger
        want = sent_bends_deg(fold, pip, dip, finger)
        got = tuple(angles[f"g_{finger}_{k}"][0] for k in ("fold", "curl", "distal"))
        assert got == pytest.approx(want, abs=1e-4), finger


def test_index_spread_toward_thumb_is_negative_side() -> None:
    hand = right_hand(spread=10.0)
    vec = landmarks_to_vectors(make(body_points(), mirrored_hand(hand), hand), calibration=REF).vectors
    assert v("g_index_side_r", vec) == pytest.approx(-10 / 30, abs=1e-6)
    assert v("g_index_side_l", vec) == pytest.approx(-10 / 30, abs=1e-6)


def test_palm_turned_medial_matches_spec_worked_encode() -> None:
    # spec §3.3 worked: a right hand turned 90° about +Y has palm normal +X, stored (0, 0.707107, 0)
    hand = right_hand() @ rot_y(90.0).T
    vec = landmarks_to_vectors(make(body_points(), mirrored_hand(hand), hand), calibration=REF).vectors
    assert [v(f"w_q{a}_r", vec) for a in "xyz"] == pytest.approx([0.0, 0.707107, 0.0], abs=1e-6)
    assert [v(f"w_q{a}_l", vec) for a in "xyz"] == pytest.approx([0.0, 0.707107, 0.0], abs=1e-6)


def _elbow_for(shoulder: F64, wrist: F64, arm: float) -> F64:
    """An elbow with upper arm = forearm = arm / 2 between ``shoulder`` and ``wrist`` (body frame)."""
    axis = wrist - shoulder
    half = 0.5 * float(np.linalg.norm(axis))
    side = np.cross(axis, [0.0, 0.0, 1.0])
    side /= np.linalg.norm(side)
    out: F64 = shoulder + 0.5 * axis + side * np.sqrt((0.5 * arm) ** 2 - half**2)
    return out


def test_arm_position_in_calibrated_units_spec_4_1() -> None:
    # an arm whose upper arm + forearm is the calibrated arm length: the wrist as seen
    p_r = np.array([-0.2, -0.3, 0.4])
    e_r = _elbow_for(np.array([-0.18, 0.0, 0.0]), p_r, 0.56)
    out = landmarks_to_vectors(make(body_points(wrist_r=p_r, wrist_l=p_r @ M, elbow_r=e_r, elbow_l=e_r @ M),
                                    right_hand(), right_hand()), calibration=REF)
    unit = REF.units.L
    expected = [0.2 / (2.5 * unit[0]), -0.3 / (2.5 * unit[1]), 0.4 / (2.5 * unit[2])]
    for side in "lr":
        assert [v(f"a_{a}_{side}", out.vectors) for a in "xyz"] == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("seen", [0.40, 0.56, 0.80])
def test_arm_is_sent_at_its_calibrated_length_spec_4_1(seen: float) -> None:
    # spec §4.1 "The arm at its calibrated length": a camera's arm measures 0.40 or 0.80 m in one
    # frame for a calibrated 0.56; the wrist is sent along the seen shoulder -> wrist at the reach
    # seen (|shoulder -> wrist| / (upper arm + forearm)) times 0.56, on both encoder paths
    shoulder = np.array([-0.18, 0.0, 0.0])
    direction = np.array([-0.1, -0.5, 0.6]) / np.linalg.norm([-0.1, -0.5, 0.6])
    wrist = shoulder + 0.8 * seen * direction  # reach 0.8
    elbow = _elbow_for(shoulder, wrist, seen)
    lm = make(body_points(wrist_r=wrist, wrist_l=wrist @ M, elbow_r=elbow, elbow_l=elbow @ M),
              right_hand(), right_hand())
    sent = shoulder + 0.8 * 0.56 * direction
    unit = REF.units.L
    expected = [-sent[0] / (2.5 * unit[0]), sent[1] / (2.5 * unit[1]), sent[2] / (2.5 * unit[2])]
    two = HolisticLandmarks(np.concatenate([lm.pose_world] * 2), np.ones((2, 33)), np.concatenate([lm.left_hand] * 2),
                            np.concatenate([lm.right_hand] * 2), hand_scale=np.ones(2))
    batch = landmarks_to_vectors(two, calibration=REF)  # the batch path (a batch of one takes the other)
    one = landmarks_to_vectors(lm, calibration=REF)
    for vectors in (batch.vectors[:1], one.vectors):
        for side in "lr":
            assert [v(f"a_{a}_{side}", vectors) for a in "xyz"] == pytest.approx(expected, abs=1e-9)


def test_spread_zero_when_elbow_down_one_when_lateral() -> None:
    shoulder_r = np.array([-0.18, 0.0, 0.0])
    wrist = shoulder_r + np.array([0.0, 0.0, 0.5])  # arm straight forward
    down = body_points(wrist_r=wrist, elbow_r=shoulder_r + np.array([0.0, -0.1, 0.25]))
    out = landmarks_to_vectors(make(down, right_hand(), right_hand()), calibration=REF)
    assert v("a_spread_r", out.vectors) == pytest.approx(0.0, abs=1e-9)
    side = body_points(wrist_r=wrist, elbow_r=shoulder_r + np.array([-0.1, 0.0, 0.25]))
    out = landmarks_to_vectors(make(side, right_hand(), right_hand()), calibration=REF)
    assert v("a_spread_r", out.vectors) == pytest.approx(1.0, abs=1e-9)
    # elbow raised above the line (beyond 90°) is clamped to 1 and reported
    up = body_points(wrist_r=wrist, elbow_r=shoulder_r + np.array([-0.1, 0.05, 0.25]))
    out = landmarks_to_vectors(make(up, right_hand(), right_hand()), calibration=REF)
    assert v("a_spread_r", out.vectors) == 1.0
    assert out.report.clamped["a_spread_r"] == 1


def test_head_yaw_toward_left_is_positive() -> None:
    out = landmarks_to_vectors(make(body_points(), right_hand(), right_hand(), face_points(30.0)),
                               calibration=REF)
    assert [v(i, out.vectors) for i in ("h_yaw", "h_pitch", "h_roll")] == pytest.approx([30 / 90, 0, 0],
                                                                                          abs=1e-9)
    assert out.tracking["head"][0] == "tracked"


def test_missing_hand_is_lost_and_nan_and_no_face_is_not_estimated() -> None:
    lm = make(body_points(), np.full((21, 3), np.nan), right_hand())
    out = landmarks_to_vectors(lm, calibration=REF)
    hand_l = [d.index for d in REGISTRY.dimensions if d.part == "hand_l"]
    assert np.isnan(out.vectors[0, hand_l]).all()
    assert out.tracking["hand_l"][0] == "lost" and out.tracking["hand_r"][0] == "tracked"
    assert out.tracking["head"][0] == "not_estimated"
    assert dict(out.conditions(0).tracking)["hand_l"] == "lost"
    assert out.report.tracked_fraction["hand_l"] == 0.0


def test_camera_frame_is_converted_to_y_up_left_shoulder_at_plus_x() -> None:
    # a person facing the camera: their left shoulder at image right (+x), head up (−y in MediaPipe)
    from posewire.producers.landmarks import pose_in_body_frame
    lm = make(body_points(), right_hand(), right_hand())
    assert lm.pose_world[0, 11, 0] > 0 and lm.pose_world[0, 0, 1] < 0  # MediaPipe: y down
    body, ok = pose_in_body_frame(lm)
    assert ok.all()
    assert body[0, 11] == pytest.approx([0.18, 0.0, 0.0])
    assert body[0, 0] == pytest.approx([0.0, 0.2, 0.1])  # nose up and forward


finite = st.floats(-1.0, 1.0, allow_nan=False)


@st.composite
def poses(draw: st.DrawFn) -> tuple[F64, F64, F64, F64, F64]:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pose = body_points() + rng.normal(0.0, 0.03, (33, 3))
    for idx in (13, 14, 15, 16):
        pose[idx] = rng.uniform([-0.6, -0.6, -0.2], [0.6, 0.4, 0.6])
    left = right_hand(fold=draw(st.floats(-20, 100)), pip=draw(st.floats(-10, 100)), dip=draw(st.floats(-10, 80)))
    right = right_hand(fold=draw(st.floats(-20, 100)), pip=draw(st.floats(-10, 100)), dip=draw(st.floats(-10, 80)))
    left = (mirrored_hand(left) + rng.normal(0, 0.004, (21, 3))) @ rng_rotation(rng).T + pose[15]
    right = (right + rng.normal(0, 0.004, (21, 3))) @ rng_rotation(rng).T + pose[16]
    face = face_points(draw(st.floats(-60, 60)))
    face[[33, 263, 10, 152]] += rng.normal(0, 0.005, (4, 3))
    return pose, left, right, face, camera_rotation(rng)


def camera_rotation(rng: np.random.Generator) -> F64:
    """A camera yaw and pitch (no roll): world up stays in the body's sagittal plane,
    which the pelvis frame of spec §4.5 assumes (level camera, upright pelvis)."""
    return rot_y(rng.uniform(-180, 180)) @ rot_x(rng.uniform(-30, 30))


def rng_rotation(rng: np.random.Generator) -> F64:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    out: F64 = q
    return out


@settings(max_examples=60, deadline=None)
@given(poses())
def test_mirror_law(sample: tuple[F64, F64, F64, F64, F64]) -> None:
    """Mirroring the landmarks across the sagittal plane and swapping sides gives
    mirror(vector) (spec §3.2), whatever the camera yaw and pitch."""
    pose, left, right, face, camera = sample
    lm = make(pose, left, right, face, rotation=camera, offset=np.array([0.1, 0.2, 2.0]))
    lm_m = make(pose[POSE_PERM] @ M, right @ M, left @ M, face[FACE_PERM] @ M, rotation=camera,
                offset=np.array([0.1, 0.2, 2.0]))
    a = landmarks_to_vectors(lm, calibration=REF)
    b = landmarks_to_vectors(lm_m, calibration=REF)
    # a depth repair (spec §4.3) rescales a finger's depth along the camera's axis, which the
    # mirror keeps only for a camera in the sagittal plane: those fingers' dims are left out
    # here, and the law is checked in full for such a camera below
    keep = np.ones(a.vectors.shape[1], dtype=bool)
    for s, t in (("l", "r"), ("r", "l")):
        if a.report.degenerate.get(f"fingers_depth_repaired_{s}") or b.report.degenerate.get(
                f"fingers_depth_repaired_{t}"):
            for finger in ("index", "middle", "ring", "pinky"):
                for kind in ("curl", "fold", "side", "distal"):
                    keep[[REGISTRY.index(f"g_{finger}_{kind}_{s}"), REGISTRY.index(f"g_{finger}_{kind}_{t}")]] = False
    # without body dims the head is relative to the camera's upright frame (spec §4.4), which
    # the mirror keeps only for a camera in the sagittal plane too (checked below)
    if not np.isfinite(a.vectors[0, REGISTRY.index("b_yaw")]):
        keep[[REGISTRY.index(d) for d in ("h_yaw", "h_pitch", "h_roll")]] = False
    np.testing.assert_allclose(b.vectors[:, keep], mirror(a.vectors)[:, keep], atol=1e-7)
    assert a.tracking["hand_l"][0] == b.tracking["hand_r"][0]
    sagittal = rot_x(float(np.degrees(np.arcsin(np.clip(-camera[1, 2], -1.0, 1.0)))))
    lm = make(pose, left, right, face, rotation=sagittal, offset=np.array([0.1, 0.2, 2.0]))
    lm_m = make(pose[POSE_PERM] @ M, right @ M, left @ M, face[FACE_PERM] @ M, rotation=sagittal,
                offset=np.array([0.1, 0.2, 2.0]))
    a = landmarks_to_vectors(lm, calibration=REF)
    b = landmarks_to_vectors(lm_m, calibration=REF)
    np.testing.assert_allclose(b.vectors, mirror(a.vectors), atol=1e-7)
    for s, t in (("l", "r"), ("r", "l")):
        key = "fingers_depth_repaired_"
        assert a.report.degenerate.get(key + s, 0) == b.report.degenerate.get(key + t, 0)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_noisy_landmarks_stay_in_bounds(seed: int) -> None:
    rng = np.random.default_rng(seed)
    batch = 8
    lm = HolisticLandmarks(
        pose_world=rng.normal(0, 0.5, (batch, 33, 3)), pose_visibility=rng.uniform(0, 1, (batch, 33)),
        left_hand=rng.normal(0, 0.1, (batch, 21, 3)), right_hand=rng.normal(0, 0.1, (batch, 21, 3)),
        face=rng.normal(0, 0.1, (batch, 468, 3)), hand_scale=rng.uniform(0.001, 0.01, batch))
    out = landmarks_to_vectors(lm)
    vec = out.vectors
    ok = np.isfinite(vec)
    assert ((vec >= LOWER) | ~ok).all() and ((vec <= UPPER) | ~ok).all()
    assert set(out.tracking) == {"arm_l", "arm_r", "hand_l", "hand_r", "head", "body", "face", "mouth"}


def _turned(a: F64 | None, quarter_turns: int) -> F64 | None:
    """Points of a camera turned about its optical axis by quarter turns: (x, y) -> (−y, x) each."""
    if a is None:
        return None
    out = np.array(a, dtype=np.float64)
    for _ in range(quarter_turns):
        out = np.stack([-out[..., 1], out[..., 0], out[..., 2]], axis=-1)
    return out


@pytest.mark.parametrize("quarter_turns", [1, 2, 3])
def test_a_chest_up_shot_reads_the_same_from_a_camera_on_its_side(quarter_turns: int) -> None:
    # spec §4.5: without hips the chest stands on the camera's up, the image axis nearest the
    # guessed trunk; a camera turned by quarter turns about its axis (a phone video stored on
    # its side) turns every point alike, so every chest-relative dim is unchanged
    from pathlib import Path

    from posewire.producers.poseformat import read_pose_file

    signer = read_pose_file(Path(__file__).parent / "data" / "holistic_signer.pose").landmarks
    assert (signer.pose_visibility[:, [23, 24]] < 0.8).any(-1).all()  # a chest-up shot: hips never seen
    base = landmarks_to_vectors(signer)
    turned = HolisticLandmarks(
        pose_world=_turned(signer.pose_world, quarter_turns), pose_visibility=signer.pose_visibility,
        left_hand=_turned(signer.left_hand, quarter_turns), right_hand=_turned(signer.right_hand, quarter_turns),
        face=_turned(signer.face, quarter_turns), hand_scale=signer.hand_scale,
        pose_image=_turned(signer.pose_image, quarter_turns))
    out = landmarks_to_vectors(turned, calibration=base.calibration)
    assert np.isnan(out.vectors).sum() == np.isnan(base.vectors).sum()
    assert np.allclose(out.vectors, base.vectors, atol=1e-9, equal_nan=True)


def test_hips_at_the_frames_edge_are_not_seen() -> None:
    # spec §4.5: both hips count as seen from visibility 0.8 (or a higher caller threshold)
    from pathlib import Path

    from posewire.producers.landmarks import HIPS_VISIBILITY
    from posewire.producers.poseformat import read_pose_file

    assert HIPS_VISIBILITY == 0.8
    signer = read_pose_file(Path(__file__).parent / "data" / "holistic_signer.pose").landmarks
    vis = signer.pose_visibility.copy()
    b_yaw = REGISTRY.index("b_yaw")
    for hips, seen in ((0.79, False), (0.8, True)):
        vis[:, [23, 24]] = hips
        lm = HolisticLandmarks(pose_world=signer.pose_world, pose_visibility=vis, left_hand=signer.left_hand,
                               right_hand=signer.right_hand, face=signer.face, hand_scale=signer.hand_scale,
                               pose_image=signer.pose_image)
        res = landmarks_to_vectors(lm)
        assert bool(np.isfinite(res.vectors[:, b_yaw]).any()) is seen, hips
        assert (res.report.degenerate.get("body_hips_not_visible", 0) > 0) is not seen


def test_face_fit_recovers_a_turned_reference_exactly() -> None:
    """spec §4.4 "The face's rotation": the rigid fit returns the rotation of the reference
    shape, scaled and moved, in the batch and the single-frame path; fewer than 6 points:
    no fit."""
    from posewire.codec.quaternion import to_matrix
    from posewire.producers.landmarks import HEAD_REFERENCE, face_fit
    from posewire.producers.landmarks_single import _face_fit1

    ref = np.array(list(HEAD_REFERENCE.values()))
    rng = np.random.default_rng(4)
    for _ in range(20):
        turn = to_matrix(rng.normal(size=4))
        pts = (ref @ turn.T) * rng.uniform(0.001, 10.0) + rng.normal(size=3)
        fitted, ok = face_fit(pts[None])
        assert ok[0]
        np.testing.assert_allclose(fitted[0], turn, atol=1e-12)
        single = _face_fit1([tuple(p) for p in pts.tolist()])
        assert single is not None
        np.testing.assert_allclose(np.array(single), turn, atol=1e-12)
    pts[5:] = np.nan
    assert not face_fit(pts[None])[1][0] and _face_fit1([tuple(p) for p in pts.tolist()]) is None
