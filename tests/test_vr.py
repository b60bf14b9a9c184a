"""OpenXR/WebXR hand joints -> vector (posewire.producers.vr): the VR = webcam promise, seed 004
missing joints, the mirror law, the OpenXR frame, bad input."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from posewire.codec.calibration import REFERENCE_CALIBRATION, BodyFrame, units
from posewire.codec.errors import UsageError
from posewire.codec.quaternion import from_axis_angle, from_matrix, rotate
from posewire.codec.registry import REGISTRY
from posewire.producers.landmarks import MEDIAPIPE_TO_Y_UP, HolisticLandmarks, LandmarkCalibration, landmarks_to_vectors
from posewire.producers.vr import (
    OPENXR_BODY_ROTATION,
    VR_JOINTS,
    WEBXR_JOINTS,
    VRJointPose,
    effective_parents,
    vr_hand_to_vector,
)

F64 = NDArray[np.float64]
REF = LandmarkCalibration(REFERENCE_CALIBRATION, units(REFERENCE_CALIBRATION))
M = np.diag([-1.0, 1.0, 1.0])  # sagittal reflection in body coordinates (spec §3.2)
FINGERS = ("thumb", "index", "middle", "ring", "pinky")
ANATOMY = {"index": "index", "middle": "middle", "ring": "ring", "pinky": "little"}


def hand_dim_ids(side: str) -> list[str]:
    return [d.id for d in REGISTRY.dimensions if d.part == f"hand_{side}"]


def col(dim_id: str) -> int:
    return REGISTRY.index(dim_id)


def rot(axis: F64, deg: float) -> F64:
    """Rotation matrix (3, 3) about ``axis`` by ``deg`` (right-hand rule)."""
    q = from_axis_angle(np.asarray(axis, dtype=float) / np.linalg.norm(axis), np.radians(deg))
    return np.stack([rotate(q, e) for e in np.eye(3)], axis=-1)


# ---------------------------------------------------------------- a parametric hand


@dataclass(frozen=True)
class HandPose:
    """Known joint angles (degrees) of a right hand in its canonical local frame (spec
    §2.4: +Y fingers, +Z palm normal, +X thumb; wrist at the origin, metres)."""

    fold: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)  # index..pinky base knuckle
    pip: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    dip: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    middle_side: float = 0.0  # + toward the pinky
    thumb_fold: float = 0.0
    thumb_side: float = 0.0
    thumb_bend: tuple[float, float] = (0.0, 0.0)  # MCP, IP (signed, + toward the fingers)
    thumb_roll: float = 0.0


MCP_BASES = {"index": (0.022, 0.090), "middle": (0.0, 0.092), "ring": (-0.020, 0.088), "pinky": (-0.038, 0.080)}
PHALANGES = (0.045, 0.028, 0.022)


def skeleton(pose: HandPose) -> tuple[dict[str, F64], F64]:
    """Anatomical joints (``index_mcp`` …, ``thumb_cmc`` …, plus the OpenXR-only
    ``palm`` and ``<finger>_base`` metacarpal bases) and the thumb metacarpal's dorsal
    axis, all in the canonical local frame. Fingers are built in the finger frame
    (lateral L = m̂ × Z, m̂ = wrist → MCP, Z): so fold and curl are exact by the §4.3
    definitions of posewire.producers.hand, and so is the middle finger's side."""
    ez = np.array([0.0, 0.0, 1.0])
    pts: dict[str, F64] = {"wrist": np.zeros(3), "palm": np.array([0.0, 0.05, 0.0])}
    for k, (finger, (x, y)) in enumerate(MCP_BASES.items()):
        mcp = np.array([x, y, 0.0])
        m = mcp / np.linalg.norm(mcp)
        lateral = np.cross(m, ez)
        lateral /= np.linalg.norm(lateral)
        # side 0 = the relaxed splay (the side row's neutral_deg) toward the pinky
        sigma = np.radians((REGISTRY.by_id[f"g_{finger}_side_r"].row.neutral_deg or 0.0)
                           + (pose.middle_side if finger == "middle" else 0.0))
        phi = np.radians(pose.fold[k])
        # spec §4.3: side turns the finger in the palm plane from its metacarpal (toward
        # the pinky), fold and curl bend it about its own lateral axis d × Z
        d = np.cos(sigma) * m - np.sin(sigma) * lateral
        lat_d = np.cross(d, ez)
        b1 = np.cos(phi) * d + np.sin(phi) * ez
        b2 = rot(lat_d, pose.pip[k]) @ b1
        b3 = rot(lat_d, pose.dip[k]) @ b2
        pts[f"{finger}_base"] = 0.3 * mcp
        pts[f"{finger}_mcp"] = mcp
        pts[f"{finger}_pip"] = mcp + PHALANGES[0] * b1
        pts[f"{finger}_dip"] = pts[f"{finger}_pip"] + PHALANGES[1] * b2
        pts[f"{finger}_tip"] = pts[f"{finger}_dip"] + PHALANGES[2] * b3
    # spec §4.3 thumb: R1 = R_Z(fold)·R_tx(side)·R_ty(roll) from the rest t_y, joints R_Z(bend)
    t_y = np.array([0.6, 0.8, 0.0])
    t_x = np.cross(t_y, ez)
    r1 = rot(ez, pose.thumb_fold) @ rot(t_x, pose.thumb_side) @ rot(t_y, pose.thumb_roll)
    axis = r1 @ t_y
    pts["thumb_cmc"] = np.array([0.02, 0.025, 0.0])
    pts["thumb_mcp"] = pts["thumb_cmc"] + 0.04 * axis
    pts["thumb_ip"] = pts["thumb_mcp"] + 0.032 * (r1 @ rot(ez, pose.thumb_bend[0]) @ t_y)
    pts["thumb_tip"] = pts["thumb_ip"] + 0.025 * (r1 @ rot(ez, sum(pose.thumb_bend)) @ t_y)
    dorsal = r1 @ np.array([0.0, 0.0, -1.0])
    return pts, dorsal


MEDIAPIPE_ORDER = ["wrist", "thumb_cmc", "thumb_mcp", "thumb_ip", "thumb_tip",
                   *(f"{f}_{j}" for f in ("index", "middle", "ring", "pinky") for j in ("mcp", "pip", "dip", "tip"))]
OPENXR_OF = {"palm": "palm", "wrist": "wrist", "thumb_cmc": "thumb-metacarpal", "thumb_mcp": "thumb-proximal",
             "thumb_ip": "thumb-distal", "thumb_tip": "thumb-tip",
             **{f"{f}_{j}": f"{ANATOMY[f]}-{x}" for f in ANATOMY
                for j, x in (("base", "metacarpal"), ("mcp", "proximal"), ("pip", "intermediate"),
                             ("dip", "distal"), ("tip", "tip"))}}
assert sorted(OPENXR_OF.values()) == sorted(VR_JOINTS)


def to_body(pose: HandPose, *, side: str, orientation: F64, wrist: F64) -> tuple[dict[str, F64], F64]:
    """Joints and thumb dorsal axis in the body frame: the right hand rotated by
    ``orientation`` and moved to ``wrist``; the left hand is its sagittal mirror."""
    pts, dorsal = skeleton(pose)
    body = {k: orientation @ p + wrist for k, p in pts.items()}
    d = orientation @ dorsal
    if side == "l":
        body = {k: M @ p for k, p in body.items()}
        d = M @ d
    return body, d


def openxr_joints(body: Mapping[str, F64], dorsal: F64, *, world: F64 = OPENXR_BODY_ROTATION,
                  offset: F64 | None = None) -> tuple[F64, F64]:
    """Positions (1, 26, 3) and orientations (1, 26, 4) (w, x, y, z) in a world frame whose
    body axes are the columns of ``world`` (default: OpenXR, user facing −Z). Only the
    thumb metacarpal gets a meaningful orientation (+Y dorsal, −Z toward the tip); the
    other joints get the identity."""
    shift = np.zeros(3) if offset is None else offset
    pos = np.zeros((1, len(VR_JOINTS), 3))
    for anat, name in OPENXR_OF.items():
        pos[0, VR_JOINTS.index(name)] = world @ body[anat] + shift
    ori = np.tile([1.0, 0.0, 0.0, 0.0], (1, len(VR_JOINTS), 1))
    bone = body["thumb_mcp"] - body["thumb_cmc"]
    y = world @ dorsal
    z = -(world @ bone) / np.linalg.norm(bone)
    y = y - (y @ z) * z
    y /= np.linalg.norm(y)
    ori[0, VR_JOINTS.index("thumb-metacarpal")] = from_matrix(np.stack([np.cross(y, z), y, z], axis=-1))
    return pos, ori


def body_points(wrist_r: F64, wrist_l: F64) -> F64:
    """33 MediaPipe pose points in the body frame (neck at the origin)."""
    pts = np.zeros((33, 3))
    pts[0] = (0.0, 0.2, 0.1)
    pts[11], pts[12] = (0.18, 0.0, 0.0), (-0.18, 0.0, 0.0)
    pts[23], pts[24] = (0.1, -0.5, 0.0), (-0.1, -0.5, 0.0)
    pts[13], pts[14] = (0.2, -0.28, 0.0), (-0.2, -0.28, 0.0)
    pts[15], pts[16] = wrist_l, wrist_r
    return pts


def webcam_vectors(right: Mapping[str, F64], left: Mapping[str, F64]) -> F64:
    """The webcam producer on the same hands: MediaPipe camera axes, 21 points each."""
    def mp(points: F64) -> F64:
        out: F64 = (points @ MEDIAPIPE_TO_Y_UP)[None]
        return out
    hand_r = np.stack([right[n] for n in MEDIAPIPE_ORDER])
    hand_l = np.stack([left[n] for n in MEDIAPIPE_ORDER])
    lm = HolisticLandmarks(pose_world=mp(body_points(right["wrist"], left["wrist"])),
                           pose_visibility=np.ones((1, 33)), left_hand=mp(hand_l), right_hand=mp(hand_r),
                           hand_scale=np.ones(1))
    out: F64 = landmarks_to_vectors(lm, calibration=REF).vectors
    return out


POSE = HandPose(fold=(30.0, 45.0, 60.0, 75.0), pip=(20.0, 50.0, 70.0, 90.0), dip=(10.0, 30.0, 40.0, 60.0),
                middle_side=8.0, thumb_fold=25.0, thumb_side=15.0, thumb_bend=(20.0, 35.0), thumb_roll=12.0)
HAND_ORIENTATION = rot(np.array([0.3, -0.5, 0.8]), 70.0)
WRIST_R = np.array([-0.25, -0.2, 0.3])


def vr_vec(pose: HandPose, side: str, *, orientations: bool = True) -> F64:
    wrist = WRIST_R if side == "r" else M @ WRIST_R
    body, dorsal = to_body(pose, side="r", orientation=HAND_ORIENTATION, wrist=WRIST_R)
    if side == "l":
        body, dorsal = {k: M @ p for k, p in body.items()}, M @ dorsal
    assert np.allclose(body["wrist"], wrist)
    pos, ori = openxr_joints(body, dorsal)
    out: F64 = vr_hand_to_vector(pos, side=side, orientations=ori if orientations else None).vectors  # type: ignore[arg-type]
    return out


# ---------------------------------------------------------------- (a) VR = webcam


def test_vr_and_webcam_give_the_same_hand_dims_for_the_same_pose() -> None:
    """BRIEF: "same vector as the webcam for the same hand pose". One parametric pose,
    rendered to MediaPipe 21 landmarks and OpenXR 26 joints, both hands."""
    right, _ = to_body(POSE, side="r", orientation=HAND_ORIENTATION, wrist=WRIST_R)
    left, _ = to_body(POSE, side="l", orientation=HAND_ORIENTATION, wrist=WRIST_R)
    webcam = webcam_vectors(right, left)
    for side in "lr":
        vr = vr_vec(POSE, side, orientations=False)
        cols = [col(i) for i in hand_dim_ids(side)]
        assert np.isfinite(vr[0, cols]).all()
        np.testing.assert_allclose(vr[0, cols], webcam[0, cols], rtol=0, atol=1e-9)
        assert np.abs(vr[0, cols] - webcam[0, cols]).max() < 1e-12  # measured: ~1e-15 (rounding only)


def test_known_angles_come_back() -> None:
    vec = vr_vec(POSE, "r")
    for k, finger in enumerate(FINGERS[1:]):
        assert vec[0, col(f"g_{finger}_fold_r")] == pytest.approx(POSE.fold[k] / 120, abs=1e-9)  # +1 = 120°
        # spec §4.3: each distal joint's own bend (VR joints are metric: measured exactly)
        assert vec[0, col(f"g_{finger}_curl_r")] == pytest.approx(POSE.pip[k] / 110, abs=1e-9)
        assert vec[0, col(f"g_{finger}_distal_r")] == pytest.approx(POSE.dip[k] / 90, abs=1e-9)
    assert vec[0, col("g_middle_side_r")] == pytest.approx(POSE.middle_side / 30, abs=1e-9)
    assert vec[0, col("g_thumb_fold_r")] == pytest.approx(POSE.thumb_fold / 90, abs=1e-9)
    assert vec[0, col("g_thumb_side_r")] == pytest.approx(POSE.thumb_side / 50, abs=1e-9)
    assert vec[0, col("g_thumb_curl_r")] == pytest.approx(POSE.thumb_bend[0] / 90, abs=1e-9)
    assert vec[0, col("g_thumb_distal_r")] == pytest.approx(POSE.thumb_bend[1] / 90, abs=1e-9)
    assert vec[0, col("g_thumb_roll_r")] == pytest.approx(POSE.thumb_roll / 90, abs=1e-9)
    # the palm: the body-frame hand orientation itself (spec §4.2)
    q = from_matrix(HAND_ORIENTATION)
    q = q if q[0] >= 0 else -q
    assert vec[0, [col(f"w_q{a}_r") for a in "xyz"]] == pytest.approx(q[1:], abs=1e-9)


def test_thumb_roll_default_zero_without_orientations_and_xyzw_order() -> None:
    body, dorsal = to_body(POSE, side="r", orientation=HAND_ORIENTATION, wrist=WRIST_R)
    pos, ori = openxr_joints(body, dorsal)
    out = vr_hand_to_vector(pos, side="r")
    # spec §4.3: without orientations the roll comes from the bent thumb's positions
    assert out.vectors[0, col("g_thumb_roll_r")] == pytest.approx(POSE.thumb_roll / 90, abs=1e-9)
    assert any("g_thumb_roll" in n and "positions" not in n for n in out.report.notes)
    straight = HandPose(thumb_roll=12.0)  # a straight thumb shows no roll: default 0, reported
    body0, dorsal0 = to_body(straight, side="r", orientation=HAND_ORIENTATION, wrist=WRIST_R)
    out0 = vr_hand_to_vector(openxr_joints(body0, dorsal0)[0], side="r")
    assert out0.vectors[0, col("g_thumb_roll_r")] == 0.0
    assert any("too straight" in n for n in out0.report.notes)
    xyzw = vr_hand_to_vector(pos, side="r", orientations=ori[..., [1, 2, 3, 0]], quaternion_order="xyzw")
    wxyz = vr_hand_to_vector(pos, side="r", orientations=ori)
    np.testing.assert_allclose(xyzw.vectors, wxyz.vectors, atol=1e-12)


# ---------------------------------------------------------------- (b) WebXR 25 = OpenXR 26


def test_webxr_25_joints_give_the_same_dims_as_26() -> None:
    body, dorsal = to_body(POSE, side="r", orientation=HAND_ORIENTATION, wrist=WRIST_R)
    pos, ori = openxr_joints(body, dorsal)
    full = vr_hand_to_vector(pos, side="r", orientations=ori)
    web = vr_hand_to_vector(pos[:, 1:], side="r", orientations=ori[:, 1:])
    assert VR_JOINTS[1:] == WEBXR_JOINTS
    np.testing.assert_array_equal(web.vectors, full.vectors)
    assert web.report.missing_joints == {"palm": 1} and web.report.reparented == {}
    # mapping input with WebXR's own XRHandJoint names, no palm
    webxr_name = {"thumb-proximal": "thumb-phalanx-proximal", "thumb-distal": "thumb-phalanx-distal"}
    mapping: dict[str, object] = {}
    for i, name in enumerate(VR_JOINTS[1:], start=1):
        finger, _, joint = name.partition("-")
        if finger in ("index", "middle", "ring", "little"):
            web_joint = joint if joint in ("metacarpal", "tip") else f"phalanx-{joint}"
            key = f"{'pinky' if finger == 'little' else finger}-finger-{web_joint}"
        else:
            key = webxr_name.get(name, name)
        mapping[key] = VRJointPose(pos[0, i], ori[0, i])
    by_name = vr_hand_to_vector(mapping, side="r")  # type: ignore[arg-type]
    np.testing.assert_array_equal(by_name.vectors, full.vectors)


# ---------------------------------------------------------------- (c) missing joints (seed 004)


def test_dropping_an_intermediate_reparents_and_nans_only_that_finger() -> None:
    body, dorsal = to_body(POSE, side="r", orientation=HAND_ORIENTATION, wrist=WRIST_R)
    pos, ori = openxr_joints(body, dorsal)
    full = vr_hand_to_vector(pos, side="r", orientations=ori).vectors
    dropped = pos.copy()
    dropped[0, VR_JOINTS.index("index-intermediate")] = np.nan
    out = vr_hand_to_vector(dropped, side="r", orientations=ori)
    index_dims = {f"g_index_{k}_r" for k in ("curl", "fold", "side", "distal")}
    for dim_id in hand_dim_ids("r"):
        if dim_id in index_dims:
            assert np.isnan(out.vectors[0, col(dim_id)]), dim_id
        else:
            assert out.vectors[0, col(dim_id)] == full[0, col(dim_id)], dim_id
    assert out.tracking["hand_r"][0] == "tracked"
    assert out.report.missing_joints == {"index-intermediate": 1}
    assert out.report.reparented == {"index-distal": {"index-proximal": 1}}  # seed 004: nearest present ancestor
    assert out.report.not_estimated == dict.fromkeys(sorted(index_dims), 1)


def test_dropping_a_tip_keeps_fold_side_and_curl() -> None:
    body, dorsal = to_body(POSE, side="r", orientation=HAND_ORIENTATION, wrist=WRIST_R)
    pos, _ = openxr_joints(body, dorsal)
    joints = {name: pos[0, i] for i, name in enumerate(VR_JOINTS) if name != "ring-tip"}
    out = vr_hand_to_vector(joints, side="r")
    assert np.isnan(out.vectors[0, col("g_ring_distal_r")])  # the DIP needs the tip; the PIP does not
    assert np.isfinite(out.vectors[0, [col("g_ring_fold_r"), col("g_ring_side_r"), col("g_ring_curl_r")]]).all()
    assert out.report.not_estimated == {"g_ring_distal_r": 1}
    assert out.report.reparented == {}  # a tip has no children


def test_missing_wrist_loses_the_hand_and_reparents_to_the_hand_entity() -> None:
    body, dorsal = to_body(POSE, side="r", orientation=HAND_ORIENTATION, wrist=WRIST_R)
    pos, _ = openxr_joints(body, dorsal)
    pos[0, VR_JOINTS.index("wrist")] = np.nan
    out = vr_hand_to_vector(pos, side="r")
    assert np.isnan(out.vectors).all()
    assert out.tracking["hand_r"][0] == "lost" and out.report.tracked_fraction == {"hand_r": 0.0}
    assert dict(out.conditions(0).tracking) == {"hand_r": "lost"}
    assert out.report.reparented["palm"] == {"hand": 1}
    assert out.report.reparented["thumb-metacarpal"] == {"hand": 1}


def test_effective_parents_follows_seed_004() -> None:
    everything = effective_parents(set(VR_JOINTS))
    assert everything["wrist"] == "hand" and everything["palm"] == "wrist"
    assert everything["thumb-distal"] == "thumb-proximal" and everything["little-distal"] == "little-intermediate"
    some = effective_parents(set(VR_JOINTS) - {"middle-metacarpal", "middle-proximal", "middle-intermediate"})
    assert some["middle-distal"] == "wrist"


# ---------------------------------------------------------------- (d) mirror law


poses = st.builds(
    HandPose,
    fold=st.tuples(*[st.floats(-20, 100)] * 4), pip=st.tuples(*[st.floats(-10, 100)] * 4),
    dip=st.tuples(*[st.floats(-10, 80)] * 4), middle_side=st.floats(-20, 20), thumb_fold=st.floats(-40, 80),
    thumb_side=st.floats(-30, 60), thumb_bend=st.tuples(st.floats(0, 80), st.floats(0, 80)),
    thumb_roll=st.floats(-60, 60))


def random_rotation(seed: int) -> F64:
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    out: F64 = q
    return out


@settings(max_examples=60, deadline=None)
@given(poses, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_mirror_law_and_webcam_equivalence(pose: HandPose, seed_hand: int, seed_world: int) -> None:
    """Left hand = sagittal mirror of the right hand -> equal stored dims (spec §3.2), in
    any right-handed world given with its body frame; and VR = webcam for both."""
    orientation, world = random_rotation(seed_hand), random_rotation(seed_world)
    offset = np.array([0.3, 1.2, -0.4])
    frame = BodyFrame(rotation=world, origin=offset)
    vectors = {}
    bodies = {}
    for side in "lr":
        body, dorsal = to_body(pose, side=side, orientation=orientation, wrist=WRIST_R if side == "r" else M @ WRIST_R)
        bodies[side] = body
        pos, ori = openxr_joints(body, dorsal, world=world, offset=offset)
        vectors[side] = vr_hand_to_vector(pos, side=side, orientations=ori,  # type: ignore[arg-type]
                                          body_frame=frame).vectors
    right, left = hand_dim_ids("r"), hand_dim_ids("l")
    np.testing.assert_allclose(vectors["l"][0, [col(i) for i in left]], vectors["r"][0, [col(i) for i in right]],
                               atol=1e-9)
    webcam = webcam_vectors(bodies["r"], bodies["l"])
    for side, ids in (("r", right), ("l", left)):
        cols = [col(i) for i in ids if "thumb_roll" not in i]
        np.testing.assert_allclose(vectors[side][0, cols], webcam[0, cols], atol=1e-9)


# ---------------------------------------------------------------- (e) the OpenXR frame


def test_flat_right_hand_palm_forward_fingers_up_is_identity_in_openxr_space() -> None:
    """User facing −Z in OpenXR space; right hand raised, palm facing forward (−Z_xr),
    fingers up (+Y_xr), thumb toward the user's left (−X_xr) -> palm (0, 0, 0) (§4.2)."""
    pts, _ = skeleton(HandPose())
    pos = np.zeros((1, 26, 3))
    for anat, name in OPENXR_OF.items():
        p = pts[anat]
        pos[0, VR_JOINTS.index(name)] = (-p[0] + 0.2, p[1] + 1.3, -p[2] - 0.4)  # explicit OpenXR coordinates
    thumb_tip = pos[0, VR_JOINTS.index("thumb-tip")] - pos[0, VR_JOINTS.index("wrist")]
    assert thumb_tip[0] < 0  # the thumb is on the user's left = OpenXR −X
    out = vr_hand_to_vector(pos, side="r")
    vec = out.vectors[0]
    assert [vec[col(f"w_q{a}_r")] for a in "xyz"] == pytest.approx([0.0, 0.0, 0.0], abs=1e-12)
    for finger in FINGERS:
        for kind in ("curl", "fold"):
            assert vec[col(f"g_{finger}_{kind}_r")] == pytest.approx(0.0, abs=1e-12)
    # side is measured from each finger's relaxed splay (spec §4.3): fingers turned by it
    # from their metacarpals read 0
    for finger in FINGERS[1:]:
        assert vec[col(f"g_{finger}_side_r")] == pytest.approx(0.0, abs=1e-12)
    assert out.tracking["hand_r"][0] == "tracked"
    assert any("OpenXR" in n for n in out.report.notes)
    # the palm turned toward the user's left (+X body = −X_xr): 90° about +Y -> (0, 0.707107, 0) (spec §3.3)
    turned = np.asarray(pos - pos[:, 1:2]) @ rot(np.array([0.0, 1.0, 0.0]), 90.0).T
    vec = vr_hand_to_vector(turned, side="r").vectors[0]
    assert [vec[col(f"w_q{a}_r")] for a in "xyz"] == pytest.approx([0.0, 0.707107, 0.0], abs=1e-6)


# ---------------------------------------------------------------- (f) bad input


def good_positions() -> F64:
    body, dorsal = to_body(POSE, side="r", orientation=HAND_ORIENTATION, wrist=WRIST_R)
    return openxr_joints(body, dorsal)[0]


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_non_finite_coordinate_is_usage_not_finite(value: float) -> None:
    pos = good_positions()
    pos[0, 7, 1] = value  # one coordinate (an all-NaN joint would be "missing")
    with pytest.raises(UsageError) as err:
        vr_hand_to_vector(pos, side="r")
    assert err.value.code == "usage.not_finite" and "index-proximal" in err.value.path


def test_mapping_with_nan_position_or_unknown_name_is_a_usage_error() -> None:
    pos = good_positions()
    joints: dict[str, object] = {name: pos[0, i] for i, name in enumerate(VR_JOINTS)}
    with pytest.raises(UsageError) as err:
        vr_hand_to_vector({**joints, "wrist": [np.nan, np.nan, np.nan]}, side="r")  # type: ignore[dict-item]
    assert err.value.code == "usage.not_finite" and err.value.path == "wrist.position"
    with pytest.raises(UsageError) as err:
        vr_hand_to_vector({**joints, "index-knuckle": [0.0, 0.0, 0.0]}, side="r")  # type: ignore[dict-item]
    assert err.value.code == "usage.unknown_id" and err.value.path == "index-knuckle"


@pytest.mark.parametrize(("kwargs", "code"), [
    ({"side": "x"}, "usage.bad_option"),
    ({"side": "r", "quaternion_order": "zyxw"}, "usage.bad_option"),
    ({"side": "r", "body_frame": BodyFrame(rotation=np.diag([-1.0, 1.0, 1.0]), origin=np.zeros(3))},
     "usage.bad_option"),
    ({"side": "r", "orientations": np.zeros((1, 26, 4))}, "usage.zero_norm"),
    ({"side": "r", "orientations": np.ones((1, 24, 4))}, "usage.shape"),
])
def test_bad_options(kwargs: dict[str, object], code: str) -> None:
    with pytest.raises(UsageError) as err:
        vr_hand_to_vector(good_positions(), **kwargs)  # type: ignore[arg-type]
    assert err.value.code == code


def test_bad_shapes() -> None:
    with pytest.raises(UsageError) as err:
        vr_hand_to_vector(np.zeros((1, 21, 3)), side="r")
    assert err.value.code == "usage.shape"
    with pytest.raises(UsageError) as err:
        vr_hand_to_vector({"wrist": np.zeros((2, 3)), "palm": np.zeros((3, 3))}, side="r")
    assert err.value.code == "usage.shape"


def test_batch_rows_are_independent() -> None:
    pos = good_positions()
    batch = np.concatenate([pos, pos * 1.5, np.full_like(pos, np.nan)])
    out = vr_hand_to_vector(batch, side="r")
    np.testing.assert_allclose(out.vectors[1], out.vectors[0], atol=1e-12)  # scale-free: dims are angles
    assert list(out.tracking["hand_r"]) == ["tracked", "tracked", "lost"]
    assert replace(out.report, notes=()).tracked_fraction == {"hand_r": pytest.approx(2 / 3)}
