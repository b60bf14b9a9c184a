"""Laws and worked numbers of posewire.codec.calibration (spec §2, §4.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from posewire.codec import calibration as cb
from posewire.codec import quaternion as qn
from posewire.codec.errors import UsageError

M = np.diag([-1.0, 1.0, 1.0])
normalized3 = arrays(np.float64, 3, elements=st.floats(-1.0, 1.0, allow_nan=False))
lengths = st.floats(0.05, 2.0, allow_nan=False)
quats = arrays(np.float64, 4, elements=st.floats(-1.0, 1.0, allow_nan=False)).filter(
    lambda q: float(np.linalg.norm(q)) > 0.1)
points = arrays(np.float64, 3, elements=st.floats(-5.0, 5.0, allow_nan=False))


def test_reference_avatar_units() -> None:
    u = cb.units(cb.REFERENCE_CALIBRATION)
    # 2·0.9474·0.19 = 0.360012, 2·0.36·0.50 = 0.36, 2·0.3214·0.56 = 0.359968
    np.testing.assert_allclose(u.L, [0.360012, 0.36, 0.359968], rtol=0, atol=1e-15)
    assert u.fallback_axes == () and u.calibrated


def test_worked_calibration() -> None:
    cal = cb.Calibration(hand_length=0.2, torso_length=0.45, arm_length=0.6,
                        shoulder_width=0.4)
    u = cb.units(cal)
    np.testing.assert_allclose(u.L, [0.37896, 0.324, 0.38568], atol=1e-15)
    p = cb.arm_to_physical([1.0, 1.0, 1.0], u, side="r")
    np.testing.assert_allclose(p, [-0.9474, 0.81, 0.9642], atol=1e-12)


@pytest.mark.parametrize("bad", [None, 0.0, -0.1, math.nan, math.inf])
def test_fallback_is_reported(bad: float | None) -> None:
    cal = cb.Calibration(hand_length=bad, torso_length=0.5, arm_length=bad, shoulder_width=0.4)
    u = cb.units(cal)
    np.testing.assert_allclose(u.L, [0.4, 0.36, 0.4], atol=1e-15)
    assert u.fallback_axes == ("x", "z") and not u.calibrated


def test_all_axes_fall_back_to_shoulder_width() -> None:
    u = cb.units(cb.Calibration(shoulder_width=0.36))
    np.testing.assert_array_equal(u.L, [0.36, 0.36, 0.36])
    assert u.fallback_axes == ("x", "y", "z")


@pytest.mark.parametrize("s", [None, 0.0, math.nan])
def test_missing_fallback_raises(s: float | None) -> None:
    with pytest.raises(UsageError) as e:
        cb.units(cb.Calibration(hand_length=0.19, torso_length=None, arm_length=0.56,
                              shoulder_width=s))
    assert e.value.code == "usage.calibration" and e.value.path == "L_y"
    # a full calibration does not need S
    assert cb.units(cb.Calibration(0.19, 0.5, 0.56, s)).calibrated


def test_default_arm_pose_on_the_reference_avatar() -> None:
    u = cb.units(cb.REFERENCE_CALIBRATION)
    p = cb.arm_to_physical([0.2, -0.6222, 0.0], u, side="r")
    np.testing.assert_allclose(p, [-0.180006, -0.55998, 0.0], atol=1e-12)
    pl = cb.arm_to_physical([0.2, -0.6222, 0.0], u, side="l")
    np.testing.assert_allclose(pl, [0.180006, -0.55998, 0.0], atol=1e-12)


@given(normalized3, lengths, lengths, lengths, st.sampled_from(["l", "r"]))
def test_arm_round_trip(n: np.ndarray, a: float, b: float, c: float, side: str) -> None:
    u = cb.units(cb.Calibration(a, b, c, None))
    p = cb.arm_to_physical(n, u, side=side)  # type: ignore[arg-type]
    np.testing.assert_allclose(cb.arm_to_normalized(p, u, side=side), n,  # type: ignore[arg-type]
                               atol=1e-12)


@given(normalized3)
def test_arm_sides_mirror(n: np.ndarray) -> None:
    u = cb.units(cb.REFERENCE_CALIBRATION)
    right = cb.arm_to_physical(n, u, side="r")
    np.testing.assert_array_equal(cb.arm_to_physical(n, u, side="l"), M @ right)
    # + a_x is lateral on both sides: away from the midline
    if n[0] > 0:
        assert right[0] < 0


def reference_sites() -> dict[str, np.ndarray]:
    return {
        "shoulder_l": np.array([0.18, 1.45, 0.0]), "shoulder_r": np.array([-0.18, 1.45, 0.0]),
        "hip_mid": np.array([0.0, 0.825, 0.0]),  # navel = neck + 0.8·(hip_mid - neck): 0.5 below
        "wrist_r": np.array([-0.18, 1.45, 0.56]), "middle_tip_r": np.array([-0.18, 1.45, 0.75]),
    }


def test_measure_calibration_of_the_reference_avatar() -> None:
    cal = cb.measure_calibration(reference_sites())
    assert cal.hand_length == pytest.approx(0.19, abs=1e-12)
    assert cal.torso_length == pytest.approx(0.5, abs=1e-12)
    assert cal.arm_length == pytest.approx(0.56, abs=1e-12)
    assert cal.shoulder_width == pytest.approx(0.36, abs=1e-12)
    np.testing.assert_allclose(cb.units(cal).L, [0.360012, 0.36, 0.359968], atol=1e-12)


def test_measure_with_explicit_sites_and_missing_ones() -> None:
    cal = cb.measure_calibration({"neck": [0, 0, 0], "navel": [0, -0.3, -0.4]})
    assert cal.torso_length == pytest.approx(0.5, abs=1e-15)
    assert cal.hand_length is None and cal.arm_length is None and cal.shoulder_width is None
    with pytest.raises(UsageError) as e:
        cb.measure_calibration({"neck": [0, 0]})
    assert e.value.code == "usage.shape" and e.value.path == "neck"


def test_body_frame_of_an_upright_avatar() -> None:
    s = reference_sites()
    frame = cb.body_frame(s["shoulder_l"], s["shoulder_r"], s["hip_mid"])
    np.testing.assert_allclose(frame.rotation, np.eye(3), atol=1e-15)
    np.testing.assert_allclose(frame.origin, [0, 1.45, 0], atol=1e-15)
    np.testing.assert_allclose(cb.to_body_frame(s["wrist_r"], frame), [-0.18, 0, 0.56],
                               atol=1e-12)


@given(quats, points)
def test_body_frame_is_invariant_under_rigid_motion(q: np.ndarray, t: np.ndarray) -> None:
    s = reference_sites()
    rot = qn.to_matrix(q)
    moved = {k: rot @ v + t for k, v in s.items()}
    frame = cb.body_frame(moved["shoulder_l"], moved["shoulder_r"], moved["hip_mid"])
    np.testing.assert_allclose(frame.rotation, rot, atol=1e-12)
    assert float(np.linalg.det(frame.rotation)) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(cb.to_body_frame(moved["wrist_r"], frame), [-0.18, 0, 0.56],
                               atol=1e-12)


@given(quats, points, points)
def test_body_frame_round_trip(q: np.ndarray, t: np.ndarray, p: np.ndarray) -> None:
    rot = qn.to_matrix(q)
    s = reference_sites()
    frame = cb.body_frame(rot @ s["shoulder_l"] + t, rot @ s["shoulder_r"] + t,
                         rot @ s["hip_mid"] + t)
    np.testing.assert_allclose(cb.from_body_frame(cb.to_body_frame(p, frame), frame), p,
                               atol=1e-12)


def test_body_frame_batch_and_degenerate() -> None:
    s = reference_sites()
    frame = cb.body_frame(np.tile(s["shoulder_l"], (4, 1, 1)), np.tile(s["shoulder_r"], (4, 1, 1)),
                         np.tile(s["hip_mid"], (4, 1, 1)))
    pts = np.zeros((4, 7, 3))
    assert cb.to_body_frame(pts, frame).shape == (4, 7, 3)
    with pytest.raises(UsageError) as e:
        cb.body_frame([0, 0, 0], [0, 0, 0], [0, -1, 0])
    assert e.value.code == "usage.zero_norm"
    with pytest.raises(UsageError) as e:
        cb.body_frame([1, 0, 0], [-1, 0, 0], [2, 0, 0])
    assert e.value.code == "usage.zero_norm"
    with pytest.raises(UsageError) as e:
        cb.arm_to_physical([0, 0, 0], cb.units(cb.REFERENCE_CALIBRATION), side="x")  # type: ignore[arg-type]
    assert e.value.code == "usage.bad_option"
