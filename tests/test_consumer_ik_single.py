"""posewire.consumers.ik_single.arm1 (one side, Python floats: the pole of a spread, then the
two-bone solve; the single-frame path of decode_pose) equals the array path _pole then
_solve to 1e-12, degenerate cases included: target at the shoulder, target along +Z (the
spread reference along the arm), out of reach and too near."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from posewire.consumers.ik import _pole, _solve, _unit
from posewire.consumers.ik_single import arm1

_SHOULDER = (0.18, 1.42, -0.01)
_ELBOW = (0.45, 1.40, -0.03)
_WRIST = (0.70, 1.39, 0.0)
_SIDES = (((1.0, 0.0, 0.0), 1.0), ((-1.0, 0.0, 0.0), -1.0))


def _check(target: tuple[float, float, float], spread: float, up: tuple[float, float, float], a_len: float,
           low: tuple[float, float, float], b_len: float, side: int) -> None:
    lateral, fixed = _SIDES[side]
    s0 = np.array(_SHOULDER)
    pole = _pole(np.array(target) - s0, np.array(spread), np.array(lateral), fixed)
    ref = _solve(s0, np.array(up), np.asarray(a_len), np.array(low), np.asarray(b_len), np.array([target]),
                 np.array([pole]))
    got = arm1(_SHOULDER, up, a_len, low, b_len, target, spread, lateral, fixed)
    for value, name in zip(got[:4], ("upper", "lower", "elbow", "wrist"), strict=True):
        np.testing.assert_allclose(np.array([value]), getattr(ref, name), rtol=0, atol=1e-12)
    assert got[4] == bool(ref.clamped[0])


def _cases() -> list[tuple[tuple[float, float, float], float]]:
    rng = np.random.default_rng(11)
    s = np.array(_SHOULDER)
    out = [(tuple((s + rng.normal(scale=0.35, size=3)).tolist()), float(rng.uniform(-1.0, 1.0)))
           for _ in range(40)]
    out += [(_SHOULDER, 0.3),  # target at the shoulder
            (tuple((s + np.array([2.0, -0.5, 0.3])).tolist()), 1.0),  # out of reach
            (tuple((s + np.array([0.001, 0.002, 0.0])).tolist()), 0.0),  # nearer than |a − b|
            (tuple((s + np.array([0.0, 0.0, 0.4])).tolist()), 0.0),  # along +Z
            (tuple((s + np.array([0.0, -0.4, 0.0])).tolist()), 0.5)]  # straight down
    return out


@pytest.mark.parametrize("case", range(45))
@pytest.mark.parametrize("side", [0, 1])
def test_arm1_equals_pole_then_solve(case: int, side: int) -> None:
    target, spread = _cases()[case]
    s0, e0, w0 = (np.array(x) for x in (_SHOULDER, _ELBOW, _WRIST))
    up, a_len = _unit(e0 - s0)
    low, b_len = _unit(w0 - e0)
    _check(target, spread, tuple(up.tolist()), float(a_len), tuple(low.tolist()), float(b_len), side)


_coord = st.floats(-1.0, 1.0, allow_nan=False, allow_subnormal=False)
_vec = st.tuples(_coord, _coord, _coord)


@settings(max_examples=300, deadline=None)
@given(offset=_vec, spread=st.floats(-1.0, 1.0, allow_nan=False), upper=_vec,
       a_len=st.floats(0.05, 0.5), b_len=st.floats(0.05, 0.5), side=st.sampled_from([0, 1]))
@example(offset=(0.0, 0.0, 0.0), spread=0.3, upper=(1.0, 0.0, 0.0), a_len=0.3, b_len=0.25, side=1)  # at the shoulder
@example(offset=(0.0, 0.0, 0.4), spread=0.0, upper=(1.0, 0.0, 0.0), a_len=0.3, b_len=0.25, side=0)  # along +Z
@example(offset=(0.0, -0.4, 0.0), spread=0.5, upper=(0.0, 1.0, 0.0), a_len=0.3, b_len=0.25, side=1)  # bone flips
@example(offset=(2.0, -0.5, 0.3), spread=1.0, upper=(1.0, 0.0, 0.0), a_len=0.3, b_len=0.25, side=0)  # out of reach
def test_arm1_equals_the_array_path(offset: tuple[float, float, float], spread: float,
                                    upper: tuple[float, float, float], a_len: float, b_len: float,
                                    side: int) -> None:
    # spec §4.10: the decoder's fused one-arm solve against the batch path, any arm and target
    norm = float(np.linalg.norm(upper))
    up = tuple((np.array(upper) / norm).tolist()) if norm > 1e-6 else (1.0, 0.0, 0.0)
    target = (_SHOULDER[0] + offset[0], _SHOULDER[1] + offset[1], _SHOULDER[2] + offset[2])
    _check(target, spread, up, a_len, (0.0, -1.0, 0.0), b_len, side)  # type: ignore[arg-type]
