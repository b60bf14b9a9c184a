"""Tests of posewire.consumers.smoothing: Interpolator, slerp, smooth_quat, yaw_follow (seed 003)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posewire.codec.errors import UsageError
from posewire.codec.euler import head_to_quat
from posewire.codec.quaternion import palm_decode
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import DEFAULTS, LOWER, N_DIMS, UPPER, from_dict
from posewire.consumers.smoothing import Interpolator, slerp, smooth_quat, yaw_follow

PALM_R = [REGISTRY.index(d) for d in ("w_qx_r", "w_qy_r", "w_qz_r")]
HEAD = [REGISTRY.index(d) for d in ("h_yaw", "h_pitch", "h_roll")]
ROTATION = set(PALM_R) | {REGISTRY.index(f"{a}_l") for a in ("w_qx", "w_qy", "w_qz")} | set(HEAD) \
    | {REGISTRY.index(d) for d in ("b_yaw", "b_pitch", "b_roll")}
LINEAR = np.array([i for i in range(N_DIMS) if i not in ROTATION])
A_X_R = REGISTRY.index("a_x_r")

unit_quats = st.lists(st.floats(-1.0, 1.0), min_size=4, max_size=4).filter(
    lambda v: float(np.linalg.norm(v)) > 0.1).map(lambda v: np.array(v) / np.linalg.norm(v))


def _same_rotation(a: np.ndarray, b: np.ndarray, tol: float) -> None:
    assert min(np.abs(a - b).max(), np.abs(a + b).max()) <= tol


def _random_vector(seed: int) -> np.ndarray:
    vec = np.random.default_rng(seed).uniform(LOWER, UPPER)
    vec[PALM_R] *= 0.5  # inside the palm clamp
    return vec


# -- Interpolator ---------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_exact_at_frame_times_and_linear_dims_between_neighbours(s0: int, s1: int) -> None:
    v0, v1 = _random_vector(s0), _random_vector(s1)
    interp = Interpolator(delay_us=0)
    interp.push(1, 1_000, v0)
    interp.push(2, 2_000, v1)
    got, rep = interp.sample(1_000)
    np.testing.assert_array_equal(got, v0)
    assert rep.status == "exact"
    for t in (1_100, 1_500, 1_999):
        got, rep = interp.sample(t)
        assert rep.status == "interpolated" and rep.alpha == pytest.approx((t - 1_000) / 1_000)
        lo, hi = np.minimum(v0, v1)[LINEAR], np.maximum(v0, v1)[LINEAR]
        assert np.all(got[LINEAR] >= lo - 1e-12) and np.all(got[LINEAR] <= hi + 1e-12)
        np.testing.assert_allclose(got[LINEAR], v0[LINEAR] + rep.alpha * (v1 - v0)[LINEAR], atol=1e-12)
    got, rep = interp.sample(2_000)
    np.testing.assert_array_equal(got, v1)


def test_delay_shifts_the_render_time() -> None:
    interp = Interpolator(delay_us=50_000)
    interp.push(1, 0, from_dict({"a_x_r": 0.0}))
    interp.push(2, 100_000, from_dict({"a_x_r": 1.0}))
    got, rep = interp.sample(100_000)
    assert rep.render_us == 50_000 and got[A_X_R] == pytest.approx(0.5)


def test_palm_slerp_takes_the_short_path_with_unit_norm() -> None:
    # two palms 170° apart about +Y the long way round through the stored values: slerp
    # must turn the short way (10°), i.e. stay near both ends, not pass through identity
    interp = Interpolator(delay_us=0)
    a = from_dict({"w_qx_r": 0.0, "w_qy_r": np.sin(np.radians(85)), "w_qz_r": 0.0})
    b = from_dict({"w_qx_r": 0.0, "w_qy_r": -np.sin(np.radians(85)), "w_qz_r": 0.0})
    interp.push(1, 0, a)
    interp.push(2, 1_000, b)
    got, _ = interp.sample(500)
    q, _ = palm_decode(got[PALM_R], side="r")
    assert np.linalg.norm(q) == pytest.approx(1.0)
    # halfway on the short arc is 180° about Y (|w| ≈ 0, clamped at 0.98); the long
    # way would be the identity (w = 1)
    assert abs(q[0]) < 0.21


@settings(max_examples=30, deadline=None)
@given(st.floats(-1.0, 1.0), st.floats(-1.0, 1.0), st.floats(0.0, 1.0))
def test_head_interpolates_as_a_rotation(y0: float, y1: float, alpha: float) -> None:
    interp = Interpolator(delay_us=0)
    interp.push(1, 0, from_dict({"h_yaw": y0}))
    interp.push(2, 1_000_000, from_dict({"h_yaw": y1}))
    t = round(alpha * 1_000_000)
    got, _ = interp.sample(t)
    # pure yaw: slerp = linear in the yaw angle
    assert got[HEAD[0]] == pytest.approx(y0 + t / 1e6 * (y1 - y0), abs=1e-9)
    expect = slerp(head_to_quat([y0, 0, 0]), head_to_quat([y1, 0, 0]), t / 1e6)
    _same_rotation(head_to_quat(got[HEAD]), expect, 1e-9)


def test_absent_dims_hold_their_last_value() -> None:
    interp = Interpolator(delay_us=0)
    interp.push(1, 0, from_dict({"a_x_r": 0.4}))
    second = from_dict({"a_y_r": 0.2})
    second[A_X_R] = np.nan
    rep = interp.push(2, 1_000, second)
    assert rep.absent == ("a_x_r",)
    got, srep = interp.sample(1_000)
    assert got[A_X_R] == 0.4 and srep.held_dims == ("a_x_r",)
    got, _ = interp.sample(500)
    assert got[A_X_R] == pytest.approx(0.4)
    # never seen: the default (spec §3.5)
    fresh = Interpolator(delay_us=0)
    fresh.push(7, 0, np.full(N_DIMS, np.nan))
    np.testing.assert_array_equal(fresh.sample(0)[0], DEFAULTS)


def test_out_of_order_and_duplicate_frames_are_ignored_and_reported() -> None:
    interp = Interpolator(delay_us=0)
    assert interp.push(10, 1_000, from_dict({"a_x_r": 0.1})).status == "first"
    assert interp.push(11, 2_000, from_dict({"a_x_r": 0.2})).status == "in_order"
    rep = interp.push(9, 1_500, from_dict({"a_x_r": 0.9}))
    assert not rep.accepted and rep.status == "stale"
    assert not interp.push(11, 2_500, from_dict({"a_x_r": 0.9})).accepted
    gap = interp.push(14, 3_000, from_dict({"a_x_r": 0.3}))
    assert gap.accepted and gap.status == "gap" and gap.missing == 2
    got, srep = interp.sample(2_500)
    assert got[A_X_R] == pytest.approx(0.25) and srep.lost == 2
    # wrap-around (spec §5.10, uint32)
    wrap = Interpolator(delay_us=0)
    wrap.push(2**32 - 1, 0, DEFAULTS)
    assert wrap.push(0, 1_000, DEFAULTS).status == "in_order"
    # a jump far behind is a reset, not stale
    assert wrap.push(100_000, 2_000, DEFAULTS).status == "gap"
    assert wrap.push(5, 0, DEFAULTS).status == "reset"


def test_loss_holds_the_last_frame_then_reports_stale() -> None:
    interp = Interpolator(delay_us=0, max_hold_us=500_000)
    assert interp.sample(0)[1].status == "empty" and interp.sample(0)[1].stale
    interp.push(1, 0, from_dict({"a_x_r": 0.1}))
    interp.push(2, 10_000, from_dict({"a_x_r": 0.2}))
    got, rep = interp.sample(300_000)
    assert rep.status == "held" and rep.held and not rep.stale and got[A_X_R] == 0.2
    assert rep.gap_us == 290_000
    got, rep = interp.sample(600_000)
    assert rep.status == "stale" and rep.stale and got[A_X_R] == 0.2


def test_extrapolation_is_opt_in_and_bounded() -> None:
    interp = Interpolator(delay_us=0, extrapolate_us=20_000)
    interp.push(1, 0, from_dict({"a_x_r": 0.1}))
    interp.push(2, 10_000, from_dict({"a_x_r": 0.2}))
    got, rep = interp.sample(15_000)
    assert rep.extrapolated and got[A_X_R] == pytest.approx(0.25)
    assert interp.sample(40_000)[1].status == "held"


def test_options_are_checked() -> None:
    with pytest.raises(UsageError):
        Interpolator(delay_us=-1)
    with pytest.raises(UsageError):
        Interpolator().push(1, 0, np.zeros(3))


# -- smooth_quat (seed 003 QuatTemporalFilter) ------------------------------------------

@settings(max_examples=50, deadline=None)
@given(unit_quats, unit_quats)
def test_slerp_endpoints_unit_norm_and_short_path(a: np.ndarray, b: np.ndarray) -> None:
    _same_rotation(slerp(a, b, 0.0), a, 1e-12)
    _same_rotation(slerp(a, b, 1.0), b, 1e-12)
    mid = slerp(a, b, 0.5)
    assert np.linalg.norm(mid) == pytest.approx(1.0, abs=1e-12)
    # short path: the midpoint is at most 90° (as a rotation) from both ends
    assert abs(float(mid @ a)) >= np.cos(np.pi / 4) - 1e-12
    assert abs(float(mid @ b)) >= np.cos(np.pi / 4) - 1e-12


@settings(max_examples=50, deadline=None)
@given(unit_quats, unit_quats, st.floats(0.0, 0.2), st.floats(0.1, 300.0))
def test_smooth_quat_is_frame_rate_independent(a: np.ndarray, b: np.ndarray, dt: float, rate: float) -> None:
    one = smooth_quat(a, b, dt, rate=rate)
    two = smooth_quat(smooth_quat(a, b, dt / 2, rate=rate), b, dt / 2, rate=rate)
    _same_rotation(one, two, 1e-12)
    _same_rotation(smooth_quat(a, b, 0.0, rate=rate), a, 1e-15)


def test_smooth_quat_converges() -> None:
    a = np.array([1.0, 0.0, 0.0, 0.0])
    b = np.array([np.cos(1.0), np.sin(1.0), 0.0, 0.0])
    q = a
    for _ in range(200):
        q = smooth_quat(q, b, 1 / 60, rate=20.0)
    _same_rotation(q, b, 1e-12)
    with pytest.raises(UsageError):
        smooth_quat(a, b, 0.1, rate=0.0)


# -- yaw_follow (seed 003 QuatYawFollow) ------------------------------------------------

angles = st.floats(-np.pi + 1e-3, np.pi - 1e-3)


def _wrap(x: float) -> float:
    return float(np.pi - np.mod(np.pi - x, 2 * np.pi))


@settings(max_examples=100, deadline=None)
@given(angles, st.floats(-np.pi / 4, np.pi / 4), st.floats(0.0, 1.0))
def test_yaw_within_threshold_does_not_move(body: float, offset: float, dt: float) -> None:
    assert float(yaw_follow(body, _wrap(body + offset), dt)) == pytest.approx(body, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(angles, angles, st.floats(0.0, 2.0))
def test_yaw_never_overshoots_and_mirrors(body: float, head: float, dt: float) -> None:
    before = _wrap(head - body)
    after = _wrap(head - float(yaw_follow(body, head, dt)))
    if abs(before) > np.pi / 4:
        assert np.sign(after) == np.sign(before)
        assert np.pi / 4 - 1e-12 <= abs(after) <= abs(before) + 1e-12
        assert abs(before) - abs(after) <= 3.0 * dt + 1e-12
    if abs(abs(before) - np.pi) > 1e-6:
        assert float(yaw_follow(-body, -head, dt)) == pytest.approx(-float(yaw_follow(body, head, dt)), abs=1e-12)


def test_yaw_converges_to_the_threshold_boundary() -> None:
    body, head = 0.0, 2.0
    for _ in range(120):
        body = float(yaw_follow(body, head, 1 / 60))
    assert head - body == pytest.approx(np.pi / 4, abs=1e-12)
    # across the ±π seam: turns the short way
    assert float(yaw_follow(3.0, -3.0, 0.01, threshold=0.0)) == pytest.approx(3.03)
