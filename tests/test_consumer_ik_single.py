"""posewire.consumers.ik._solve1 (one side, Python floats; the single-frame path of
decode_pose) equals the array solver _solve to 1e-12, degenerate cases included:
target at the shoulder, pole along the shoulder→target axis (and along +Z), zero
pole, out of reach and too near; the decoder's fused _arm1 is _pole1 then _solve1, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from posewire.consumers.ik import _arm1, _pole, _pole1, _solve, _solve1, _unit

_SHOULDER = (0.18, 1.42, -0.01)
_ELBOW = (0.45, 1.40, -0.03)
_WRIST = (0.70, 1.39, 0.0)


def _cases() -> list[tuple[tuple[float, float, float], tuple[float, float, float]]]:
    rng = np.random.default_rng(11)
    s = np.array(_SHOULDER)
    out = []
    for _ in range(40):
        t = s + rng.normal(scale=0.35, size=3)
        out.append((tuple(t.tolist()), tuple(rng.normal(size=3).tolist())))
    far = s + np.array([2.0, -0.5, 0.3])
    near = s + np.array([0.001, 0.002, 0.0])
    along = s + np.array([0.0, 0.0, 0.4])
    down = s + np.array([0.0, -0.4, 0.0])
    out += [(_SHOULDER, (0.0, -1.0, 0.0)),  # target at the shoulder
            (tuple(far.tolist()), (0.0, -1.0, 0.0)),  # out of reach
            (tuple(near.tolist()), (0.0, -1.0, 0.0)),  # nearer than |a − b|
            (tuple(along.tolist()), (0.0, 0.0, 1.0)),  # pole along u, u along +Z
            (tuple(down.tolist()), (0.0, -2.0, 0.0)),  # pole along u
            (tuple(down.tolist()), (0.0, 0.0, 0.0))]  # zero pole
    return out


@pytest.mark.parametrize("case", range(46))
def test_solve1_equals_solve(case: int) -> None:
    target, pole = _cases()[case]
    s0, e0, w0 = (np.array(x) for x in (_SHOULDER, _ELBOW, _WRIST))
    up, a_len = _unit(e0 - s0)
    low, b_len = _unit(w0 - e0)
    ref = _solve(s0, up, a_len, low, b_len, np.array([target]), np.array([pole]))
    got = _solve1(_SHOULDER, tuple(up.tolist()), float(a_len), tuple(low.tolist()),
                  float(b_len), target, pole)
    for value, name in zip(got[:4], ("upper", "lower", "elbow", "wrist"), strict=True):
        np.testing.assert_allclose(np.array([value]), getattr(ref, name), rtol=0, atol=1e-12)
    assert got[4] == bool(ref.clamped[0])
    # and the pole of that target (spread 0.4, right side's lateral/fixed sense)
    axis = np.array(target) - s0
    np.testing.assert_allclose(
        np.array(_pole1(tuple(axis.tolist()), 0.4, (-1.0, 0.0, 0.0), -1.0)),
        _pole(axis, np.array(0.4), np.array([-1.0, 0.0, 0.0]), -1.0), rtol=0, atol=1e-12)


_coord = st.floats(-1.0, 1.0, allow_nan=False, allow_subnormal=False)
_vec = st.tuples(_coord, _coord, _coord)


@settings(max_examples=300, deadline=None)
@given(offset=_vec, spread=st.floats(-1.0, 1.0, allow_nan=False), upper=_vec,
       a_len=st.floats(0.05, 0.5), b_len=st.floats(0.05, 0.5), side=st.sampled_from([0, 1]))
@example(offset=(0.0, 0.0, 0.0), spread=0.3, upper=(1.0, 0.0, 0.0), a_len=0.3, b_len=0.25, side=1)  # at the shoulder
@example(offset=(0.0, 0.0, 0.4), spread=0.0, upper=(1.0, 0.0, 0.0), a_len=0.3, b_len=0.25, side=0)  # along +Z
@example(offset=(0.0, -0.4, 0.0), spread=0.5, upper=(0.0, 1.0, 0.0), a_len=0.3, b_len=0.25, side=1)  # bone flips
@example(offset=(2.0, -0.5, 0.3), spread=1.0, upper=(1.0, 0.0, 0.0), a_len=0.3, b_len=0.25, side=0)  # out of reach
def test_arm1_is_pole1_then_solve1_bit_for_bit(offset: tuple[float, float, float], spread: float,
                                               upper: tuple[float, float, float], a_len: float, b_len: float,
                                               side: int) -> None:
    # issue 22: the decoder's fused one-arm solve gives _solve1(_pole1(...))'s bits, zero signs included
    norm = float(np.linalg.norm(upper))
    up = tuple((np.array(upper) / norm).tolist()) if norm > 1e-6 else (1.0, 0.0, 0.0)
    low = (0.0, -1.0, 0.0)
    lateral, fixed = ((1.0, 0.0, 0.0), 1.0) if side == 0 else ((-1.0, 0.0, 0.0), -1.0)
    target = (_SHOULDER[0] + offset[0], _SHOULDER[1] + offset[1], _SHOULDER[2] + offset[2])
    axis = (target[0] - _SHOULDER[0], target[1] - _SHOULDER[1], target[2] - _SHOULDER[2])
    ref = _solve1(_SHOULDER, up, a_len, low, b_len, target, _pole1(axis, spread, lateral, fixed))  # type: ignore[arg-type]
    got = _arm1(_SHOULDER, up, a_len, low, b_len, target, spread, lateral, fixed)  # type: ignore[arg-type]
    assert repr(got) == repr(ref)
