"""Tests of posewire.consumers.ik: two-bone IK, poles, mirror law, clamping and fallback."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from posewire.codec.elbow import ELBOW_REFERENCE, spread_angle
from posewire.codec.quaternion import rotate
from posewire.consumers.ik import SEED003_POLE, arm_pole, min_rotation, two_bone_ik

M = np.array([-1.0, 1.0, 1.0])
S0 = np.array([-0.18, 1.43, 0.0])
DIR = np.array([-np.sqrt(0.5), -np.sqrt(0.5), 0.0])
E0 = S0 + 0.30 * DIR
W0 = E0 + 0.26 * DIR

vec3 = st.tuples(*(st.floats(-1.0, 1.0) for _ in range(3)))


def _reachable(raw: tuple[float, float, float], frac: float) -> np.ndarray:
    d = np.array(raw)
    n = np.linalg.norm(d)
    d = d / n if n > 1e-3 else np.array([0.0, 0.0, 1.0])
    return S0 + (0.05 + frac * 0.50) * d


@settings(max_examples=200, deadline=None)
@given(vec3, st.floats(0.0, 1.0), vec3)
# a pole almost along the shoulder->target line, arm folded to 5 cm (found by hypothesis)
@example((6.103515625e-05, 0.875, 0.0), 0.0, (6.103515625e-05, 0.875, 0.0))
def test_reachable_target_is_reached_and_elbow_in_pole_half_plane(raw, frac, pole_raw) -> None:
    target = _reachable(raw, frac)[None]
    pole = np.array(pole_raw)[None] + [[0.0, -1e-3, 0.0]]
    res = two_bone_ik(S0, E0, W0, target, pole)
    assert not res.fallback and not res.clamped.any()
    np.testing.assert_allclose(res.wrist, target, atol=1e-9)
    # bone lengths kept, FK of the rotations reproduces the positions
    np.testing.assert_allclose(np.linalg.norm(res.elbow - S0), 0.30, atol=1e-9)
    np.testing.assert_allclose(S0 + rotate(res.upper, E0 - S0), res.elbow, atol=1e-9)
    np.testing.assert_allclose(res.elbow + rotate(res.lower, W0 - E0), res.wrist, atol=1e-9)
    u = (target - S0) / np.linalg.norm(target - S0)
    v = pole - np.sum(pole * u) * u
    if np.linalg.norm(v) > 1e-3:
        assert np.sum((res.elbow - S0) * v) >= -1e-9


@settings(max_examples=100, deadline=None)
@given(vec3, st.floats(0.0, 1.5), vec3)
def test_mirror_law(raw, frac, pole_raw) -> None:
    target = _reachable(raw, frac)[None]
    pole = np.array(pole_raw)[None] + [[0.0, -1e-3, 0.0]]
    right = two_bone_ik(S0, E0, W0, target, pole)
    left = two_bone_ik(S0 * M, E0 * M, W0 * M, target * M, pole * M)
    np.testing.assert_allclose(left.elbow, right.elbow * M, atol=1e-9)
    mirror_q = np.array([1.0, 1.0, -1.0, -1.0])
    for a, b in ((left.upper, right.upper), (left.lower, right.lower)):
        assert abs(abs(np.sum(a * b * mirror_q)) - 1.0) < 1e-9


def test_unreachable_gives_straight_arm_toward_target() -> None:
    target = np.array([[-1.0, 1.6, 0.8]])
    res = two_bone_ik(S0, E0, W0, target, np.array([[0.0, -1.0, 0.0]]))
    assert res.clamped.all()
    u = (target - S0) / np.linalg.norm(target - S0)
    np.testing.assert_allclose(res.wrist, S0 + 0.56 * u, atol=1e-12)
    np.testing.assert_allclose(res.elbow, S0 + 0.30 * u, atol=1e-12)


def test_short_bone_falls_back() -> None:
    res = two_bone_ik(S0, S0 + np.array([0.0, -0.02, 0.0]), W0, np.array([[0.0, 1.0, 0.3]]),
                      np.array([[0.0, -1.0, 0.0]]))
    assert res.fallback
    np.testing.assert_allclose(res.upper, [[1.0, 0, 0, 0]])


def test_arm_pole_spread_frame() -> None:
    forward = np.array([[0.0, 0.0, 1.0]])
    # spec §4.1: arm forward -> reference straight down; spread 1 -> lateral
    np.testing.assert_allclose(arm_pole(forward, np.array([0.0]), side="r"), [[0, -1, 0]], atol=1e-12)
    np.testing.assert_allclose(arm_pole(forward, np.array([1.0]), side="r"), [[-1, 0, 0]], atol=1e-12)
    np.testing.assert_allclose(arm_pole(forward, np.array([1.0]), side="l"), [[1, 0, 0]], atol=1e-12)
    # hanging arm: the reference is straight back (ELBOW_REFERENCE minus its -Y part)
    hanging = arm_pole(np.array([[0.0, -1.0, 0.0]]), np.array([0.0]), side="r")
    np.testing.assert_allclose(hanging, [[0.0, 0.0, -1.0]], atol=1e-12)
    np.testing.assert_allclose(ELBOW_REFERENCE * M, ELBOW_REFERENCE)
    np.testing.assert_allclose(SEED003_POLE["l"], SEED003_POLE["r"] * M)
    np.testing.assert_allclose(SEED003_POLE["r"], np.array([-1.0, 0, 1]) / np.sqrt(2))


@settings(max_examples=200)
@given(st.floats(-1, 1), st.floats(-1, 1), st.floats(-1, 1), st.floats(0, 1), st.sampled_from(["l", "r"]))
def test_arm_pole_spread_is_exact(x: float, y: float, z: float, spread: float, side: str) -> None:
    # law (spec §4.1): the pole sits exactly spread · 90° from the reference, toward lateral,
    # so measuring it back (codec.elbow.spread_angle) returns the spread
    axis = np.array([[x, y, z]])
    assume(np.linalg.norm(axis) > 1e-3)
    pole = arm_pole(axis, np.array([spread]), side=side)  # type: ignore[arg-type]
    np.testing.assert_allclose(np.abs(pole @ axis[0]), 0.0, atol=1e-9)
    np.testing.assert_allclose(spread_angle(axis, pole, side=side), [spread * 90.0], atol=1e-9)  # type: ignore[arg-type]
    mirrored = arm_pole(axis * M, np.array([spread]), side="l" if side == "r" else "r")
    np.testing.assert_allclose(mirrored, pole * M, atol=1e-12)


def test_min_rotation_antiparallel() -> None:
    q = min_rotation(np.array([[1.0, 0, 0]]), np.array([[-1.0, 0, 0]]))
    np.testing.assert_allclose(rotate(q, [1.0, 0, 0]), [[-1.0, 0, 0]], atol=1e-12)
