"""Tests of posewire.consumers.pose.decode_pose: arms, hands, head, spine, fingers, laws."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posewire.codec.calibration import arm_to_physical, units
from posewire.codec.euler import body_to_quat, head_to_quat
from posewire.codec.quaternion import palm_decode, rotate
from posewire.codec.registry import DIMENSIONS, REGISTRY
from posewire.codec.vector import DEFAULTS, LOWER, N_DIMS, from_dict, mirror
from posewire.consumers.pose import decode_pose
from posewire.consumers.skeleton import Skeleton, calibration_of, fk, helix_humanoid

SKEL = helix_humanoid()
IX = SKEL.index
M = np.array([-1.0, 1.0, 1.0])


def _world(vec: np.ndarray, skel: Skeleton = SKEL) -> tuple[np.ndarray, np.ndarray]:
    res = decode_pose(vec, skel)
    return fk(skel, res.local_rotations)


def _same_rotation(a: np.ndarray, b: np.ndarray, tol: float = 1e-9) -> None:
    np.testing.assert_allclose(np.abs(np.sum(a * b, axis=-1)), 1.0, atol=tol)


def test_default_vector_hangs_the_hand_at_the_default_target() -> None:
    res = decode_pose(DEFAULTS, SKEL)
    pos, _rot = fk(SKEL, res.local_rotations)
    rest, _ = SKEL.rest_world()
    neck = 0.5 * (rest[IX["upperarm_l"]] + rest[IX["upperarm_r"]])
    u = units(calibration_of(SKEL))
    for s in ("l", "r"):
        expect = neck + arm_to_physical(DEFAULTS[[DIMENSIONS.index(next(
            d for d in DIMENSIONS if d.id == f"{a}_{s}")) for a in ("a_x", "a_y", "a_z")]], u, side=s)
        np.testing.assert_allclose(pos[0, IX[f"hand_{s}"]], expect, atol=1e-9)
        assert expect[1] < neck[1] - 0.4  # below the shoulder: hanging
        # elbow below the shoulder, hand orientation = the palm quaternion (spec §4.2)
        assert pos[0, IX[f"lowerarm_{s}"]][1] < neck[1]
    assert res.report()["unreachable"] == []
    # the hand's fingers point where the palm quaternion says (mostly down)
    q, _ = palm_decode(DEFAULTS[[8 + 1, 10 + 1, 12 + 1]], side="r")
    fingers = pos[0, IX["middle_01_r"]] - pos[0, IX["hand_r"]]
    np.testing.assert_allclose(fingers / np.linalg.norm(fingers), rotate(q, [0.0, 1.0, 0.0]), atol=1e-9)


def test_nan_dims_take_defaults_and_are_reported() -> None:
    vec = DEFAULTS.copy()
    vec[DIMENSIONS.index(next(d for d in DIMENSIONS if d.id == "a_y_r"))] = np.nan
    res = decode_pose(vec, SKEL)
    assert res.report()["replaced"] == ["a_y_r"]
    np.testing.assert_allclose(res.local_rotations, decode_pose(DEFAULTS, SKEL).local_rotations)


def test_a_y_up_moves_the_wrist_up() -> None:
    low, _ = _world(from_dict({"a_y_r": -0.5, "a_z_r": 0.3}))
    high, _ = _world(from_dict({"a_y_r": 0.0, "a_z_r": 0.3}))
    assert high[0, IX["hand_r"]][1] - low[0, IX["hand_r"]][1] == pytest.approx(0.5 * 2.5 * 0.288)


def _random_vectors(seed: int, count: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vec = rng.uniform(LOWER, 1.0, size=(count, N_DIMS))
    return vec


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000))
def test_mirror_law(seed: int) -> None:
    vec = _random_vectors(seed, 4)
    pos, rot = _world(vec)
    mpos, mrot = _world(mirror(vec))
    swap = [IX[n[:-1] + ("l" if n.endswith("_r") else "r")] if n.endswith(("_l", "_r")) else IX[n]
            for n in SKEL.names]
    np.testing.assert_allclose(mpos[:, swap], pos * M, atol=1e-9)
    _same_rotation(mrot[:, swap], rot * np.array([1.0, 1.0, -1.0, -1.0]))


def test_same_vector_same_proportional_place_on_other_proportions() -> None:
    small = helix_humanoid(1.5)
    vec = from_dict({"a_x_r": 0.3, "a_y_r": -0.1, "a_z_r": 0.4})
    out = []
    for skel in (SKEL, small):
        pos, _ = _world(vec, skel)
        rest, _ = skel.rest_world()
        ix = skel.index
        neck = 0.5 * (rest[ix["upperarm_l"]] + rest[ix["upperarm_r"]])
        out.append((pos[0, ix["hand_r"]] - neck) / units(calibration_of(skel)).L)
    np.testing.assert_allclose(out[0], out[1], atol=1e-9)
    pos_a, _ = _world(vec, SKEL)
    pos_b, _ = _world(vec, small)
    assert not np.allclose(pos_a[0, IX["hand_r"]], pos_b[0, small.index["hand_r"]])


def test_head_is_body_times_head_and_shared_over_present_joints() -> None:
    vec = from_dict({"h_yaw": 0.5, "h_pitch": 0.25, "b_yaw": 0.4, "b_roll": -0.3})
    q_body = body_to_quat(vec[[REGISTRY.index(d) for d in ("b_yaw", "b_pitch", "b_roll")]])
    q_head = head_to_quat(vec[[REGISTRY.index(d) for d in ("h_yaw", "h_pitch", "h_roll")]])
    for skel in (SKEL, SKEL.without(["spine_02", "spine_04", "neck_02"])):
        _, rot = _world(vec, skel)
        ix = skel.index
        _same_rotation(rot[0, ix["spine_05"]], q_body)
        from posewire.codec.quaternion import multiply
        _same_rotation(rot[0, ix["head"]], multiply(q_body, q_head))
        assert decode_pose(vec, skel).report()["skipped_joints"] == (
            [] if skel is SKEL else ["spine_02", "spine_04", "neck_02"])


def test_body_rotation_carries_arm_target() -> None:
    vec = from_dict({"b_yaw": 1.0, "a_z_r": 0.5})
    pos, _ = _world(vec)
    still, _ = _world(from_dict({"a_z_r": 0.5}))
    q = body_to_quat(vec[[REGISTRY.index(d) for d in ("b_yaw", "b_pitch", "b_roll")]])
    neck = 0.5 * (pos[0, IX["upperarm_l"]] + pos[0, IX["upperarm_r"]])
    neck0 = 0.5 * (still[0, IX["upperarm_l"]] + still[0, IX["upperarm_r"]])
    np.testing.assert_allclose(pos[0, IX["hand_r"]] - neck, rotate(q, still[0, IX["hand_r"]] - neck0),
                               atol=1e-9)


def test_finger_curl_and_fold_angles() -> None:
    vec = from_dict({"g_index_curl_r": 0.5, "g_index_fold_r": -0.2, "g_index_curl_l": 0.5,
                     "g_index_distal_r": 0.5, "g_index_distal_l": 0.5})
    _, rot = _world(vec)
    for s in ("r", "l"):
        for parent, child, want in (("01", "02", 55.0), ("02", "03", 45.0)):
            rel = rotate(np.array([1, -1, -1, -1.0]) * rot[0, IX[f"index_{parent}_{s}"]],
                         rotate(rot[0, IX[f"index_{child}_{s}"]], [0.0, 1.0, 0.0]))
            # curl 0.5 × 110° at the PIP, distal 0.5 × 90° at the DIP (identity rest frames, spec §4.3)
            assert np.degrees(np.arccos(np.clip(rel[1], -1, 1))) == pytest.approx(want)
    pos, _ = _world(vec)
    palm = pos[0, IX["index_02_r"]] - pos[0, IX["index_01_r"]]
    pos0, _ = _world(DEFAULTS)
    base = pos0[0, IX["index_02_r"]] - pos0[0, IX["index_01_r"]]
    angle = np.degrees(np.arccos(np.dot(palm, base) / np.linalg.norm(palm) / np.linalg.norm(base)))
    assert angle == pytest.approx(24.0)  # fold −0.2 × 120° (spec §4.3)


def test_random_bind_frames_give_the_same_world_pose() -> None:
    rest, _ = SKEL.rest_world()
    rng = np.random.default_rng(7)
    q = rng.normal(size=(len(SKEL), 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    other = Skeleton.from_world(SKEL.names, SKEL.parents, rest, q,
                                sites={n: (SKEL.names[j], rest[j] + off) for n, (j, off) in SKEL.sites.items()})
    vec = _random_vectors(3, 5)
    pos_a, _rot_a = _world(vec)
    pos_b, _rot_b = _world(vec, other)
    np.testing.assert_allclose(pos_b, pos_a, atol=1e-9)
