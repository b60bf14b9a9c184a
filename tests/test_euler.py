"""Laws and hand-computed cases of posewire.codec.euler (spec §4.4, §4.5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from posewire.codec import euler as eu
from posewire.codec import quaternion as qn
from posewire.codec.errors import UsageError
from posewire.codec.registry import SPINE_SHARES

angle = st.floats(-179.9, 179.9, allow_nan=False)
pitch_open = st.floats(-89.9, 89.9, allow_nan=False)
normalized3 = arrays(np.float64, 3, elements=st.floats(-1.0, 1.0, allow_nan=False))
quats = arrays(np.float64, 4, elements=st.floats(-1.0, 1.0, allow_nan=False)).filter(
    lambda q: float(np.linalg.norm(q)) > 0.1)
JOINTS = [j for j, _ in SPINE_SHARES]


def rx(d: float) -> np.ndarray:
    c, s = math.cos(math.radians(d)), math.sin(math.radians(d))
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def ry(d: float) -> np.ndarray:
    c, s = math.cos(math.radians(d)), math.sin(math.radians(d))
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rz(d: float) -> np.ndarray:
    c, s = math.cos(math.radians(d)), math.sin(math.radians(d))
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def rotation_angle_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = qn.multiply(qn.conjugate(a), b)
    out: np.ndarray = np.degrees(
        2 * np.arctan2(np.linalg.norm(d[..., 1:], axis=-1), np.abs(d[..., 0])))
    return out


# --- hand-computed cases -------------------------------------------------------------

def test_yaw_90_turns_the_face_to_plus_x() -> None:
    np.testing.assert_allclose(qn.rotate(eu.euler_to_quat(90, 0, 0), [0, 0, 1]), [1, 0, 0],
                               atol=1e-15)
    q = eu.euler_to_quat(90, 0, 0)
    h = math.sqrt(0.5)
    np.testing.assert_allclose(q, [h, 0, h, 0], atol=1e-15)


def test_pitch_and_roll_directions() -> None:
    # pitch +30: chin down — the face (+Z) turns toward -Y
    np.testing.assert_allclose(qn.rotate(eu.euler_to_quat(0, 30, 0), [0, 0, 1]),
                               [0, -0.5, math.sqrt(3) / 2], atol=1e-15)
    # roll +30: the head tilts toward -X (character's right)
    np.testing.assert_allclose(qn.rotate(eu.euler_to_quat(0, 0, 30), [0, 1, 0]),
                               [-0.5, math.sqrt(3) / 2, 0], atol=1e-15)


def test_composed_hand_value() -> None:
    # yaw 90 then pitch 90: qY(90)·qX(90) = (1/2, 1/2, 1/2, -1/2)
    np.testing.assert_allclose(eu.euler_to_quat(90, 90, 0), [0.5, 0.5, 0.5, -0.5], atol=1e-15)


def test_gimbal_rule() -> None:
    for pitch in (90.0, -90.0):
        q = eu.euler_to_quat(30.0, pitch, 20.0)
        yaw, p, roll = eu.quat_to_euler(q)
        assert float(roll) == 0.0
        assert float(p) == pitch
        # yaw absorbs roll: pitch +90 -> yaw - roll, pitch -90 -> yaw + roll
        assert float(yaw) == pytest.approx(10.0 if pitch > 0 else 50.0, abs=1e-6)
        np.testing.assert_allclose(eu.euler_to_quat(yaw, p, roll), q, atol=1e-12)


def test_head_clamp_is_reported_and_range_checked() -> None:
    n, clamped = eu.quat_to_head(eu.euler_to_quat(120, 0, 0))
    np.testing.assert_allclose(n, [1, 0, 0], atol=1e-12)
    assert bool(clamped)
    n, clamped = eu.quat_to_head(eu.euler_to_quat(45, -30, 22.5))
    np.testing.assert_allclose(n, [0.5, -0.5, 0.5], atol=1e-12)
    assert not clamped
    with pytest.raises(UsageError) as e:
        eu.head_to_quat([1.2, 0, 0])
    assert e.value.code == "usage.out_of_range"
    with pytest.raises(UsageError) as e:
        eu.euler_to_quat(math.nan, 0, 0)
    assert e.value.code == "usage.not_finite"


def test_spine_shares_and_missing_joints() -> None:
    assert sum(s for _, s in SPINE_SHARES) == pytest.approx(1.0, abs=1e-15)
    rot = eu.spine_rotations([1.0, 0.0, 0.0])  # b_yaw = +45°
    assert list(rot) == JOINTS
    np.testing.assert_allclose(rot["spine_01"], eu.euler_to_quat(4.5, 0, 0), atol=1e-15)
    np.testing.assert_allclose(rot["spine_03"], eu.euler_to_quat(11.25, 0, 0), atol=1e-15)
    # only spine_01/03/05 present: shares .1/.6, .25/.6, .25/.6
    rot = eu.spine_rotations([1.0, 0.0, 0.0], joints=["spine_05", "spine_01", "spine_03"])
    assert list(rot) == ["spine_01", "spine_03", "spine_05"]
    np.testing.assert_allclose(rot["spine_01"], eu.euler_to_quat(7.5, 0, 0), atol=1e-15)
    np.testing.assert_allclose(rot["spine_05"], eu.euler_to_quat(18.75, 0, 0), atol=1e-15)
    only = eu.spine_rotations([0.3, -0.4, 0.5], joints=["spine_03"])
    np.testing.assert_allclose(only["spine_03"], eu.body_to_quat([0.3, -0.4, 0.5]), atol=1e-15)
    for bad in (["spine_06"], []):
        with pytest.raises(UsageError) as e:
            eu.spine_rotations([0, 0, 0], joints=bad)
        assert e.value.code == "usage.bad_option"


# --- laws -------------------------------------------------------------------------------

@given(angle, angle, angle)
def test_euler_to_quat_matches_matrix_product(y: float, p: float, r: float) -> None:
    q = eu.euler_to_quat(y, p, r)
    assert q[0] >= 0.0
    np.testing.assert_allclose(qn.to_matrix(q), ry(y) @ rx(p) @ rz(r), atol=1e-12)


@given(angle, pitch_open, angle)
def test_euler_round_trip(y: float, p: float, r: float) -> None:
    yaw, pitch, roll = eu.quat_to_euler(eu.euler_to_quat(y, p, r))
    assert float(yaw) == pytest.approx(y, abs=1e-6)
    assert float(pitch) == pytest.approx(p, abs=1e-6)
    assert float(roll) == pytest.approx(r, abs=1e-6)


@given(quats)
# 3e-9 from the gimbal pole (make fuzz): yaw and roll come from atan2 of matrix entries of
# about 1e-9, so float round-off (1e-16) moves them by 1e-7 rad; the rotation is 1.3e-5° off
@example(np.array([1.9689456e-09, 0.0, 1.0, 1.0]))
def test_quat_euler_quat_round_trip(q: np.ndarray) -> None:
    yaw, pitch, roll = eu.quat_to_euler(q)
    assert -90.0 <= float(pitch) <= 90.0
    # same rotation (the sign is free where w ≈ 0), to 1e-6° away from the gimbal; near it the
    # spec §4.4 decomposition is conditioned as 1/cos(pitch): round-off ε gives ε/cos(pitch)
    m = qn.to_matrix(q)
    cos_pitch = max(float(np.hypot(m[1, 0], m[1, 1])), eu.GIMBAL_EPS)
    tolerance = 1e-6 + float(np.degrees(1e-15 / cos_pitch))
    assert float(rotation_angle_deg(eu.euler_to_quat(yaw, pitch, roll), qn.normalize(q))) < tolerance
    for a, b in zip(eu.quat_to_euler(-q), (yaw, pitch, roll), strict=True):
        assert float(a) == pytest.approx(float(b), abs=1e-9)


@given(normalized3)
def test_head_round_trip(n: np.ndarray) -> None:
    back, clamped = eu.quat_to_head(eu.head_to_quat(n))
    assert not clamped.any()
    np.testing.assert_allclose(back, n, atol=1e-9)
    back, clamped = eu.quat_to_body(eu.body_to_quat(n))
    assert not clamped.any()
    np.testing.assert_allclose(back, n, atol=1e-9)


@given(normalized3)
def test_mirror_negates_lateral_head_dims(n: np.ndarray) -> None:
    # h_yaw and h_roll are lateral (spec §3.2): mirror(q(n)) == q(-yaw, pitch, -roll)
    mirrored = n * np.array([-1.0, 1.0, -1.0])
    np.testing.assert_allclose(qn.mirror_sagittal(eu.head_to_quat(n)), eu.head_to_quat(mirrored),
                               atol=1e-12)


@given(st.floats(-1, 1), st.integers(0, 2),
       st.lists(st.sampled_from(JOINTS), min_size=1, unique=True))
def test_spine_single_axis_composes_exactly(x: float, k: int, joints: list[str]) -> None:
    n = np.zeros(3)
    n[k] = x
    product = eu.spine_product(eu.spine_rotations(n, joints=joints))
    np.testing.assert_allclose(product, eu.body_to_quat(n), atol=1e-12)


@given(normalized3, st.lists(st.sampled_from(JOINTS), min_size=1, unique=True))
def test_spine_split_composes_exactly(n: np.ndarray, joints: list[str]) -> None:
    rot = eu.spine_rotations(n, joints=joints)
    np.testing.assert_allclose(eu.spine_product(rot), eu.body_to_quat(n), atol=1e-12)


def test_batch_shapes() -> None:
    y = np.zeros((2, 3))
    assert eu.euler_to_quat(y, y, y).shape == (2, 3, 4)
    assert eu.quat_to_euler(np.tile(qn.IDENTITY, (2, 3, 1)))[0].shape == (2, 3)
    rot = eu.spine_rotations(np.zeros((5, 3)))
    assert rot["spine_02"].shape == (5, 4)
