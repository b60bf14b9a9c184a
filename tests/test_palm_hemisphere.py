"""Spec §3.3 hemisphere rule: in the clamp band the stored palm vector part depends only on
the rotation (q and −q alike, w = ±ε alike) and points into the default's hemisphere."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from posewire.codec.quaternion import PALM_CLAMP, PALM_HEMISPHERE, palm_encode

UNIT = st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3)


@given(UNIT, st.floats(0.0, 0.19), st.sampled_from("lr"), st.booleans())
def test_band_values_point_into_the_default_hemisphere(axis: list[float], w: float, side: str,
                                                       negate: bool) -> None:
    a = np.asarray(axis)
    if np.linalg.norm(a) < 1e-3 or abs(float(a @ PALM_HEMISPHERE)) / np.linalg.norm(a) < 1e-6:
        return
    a = a / np.linalg.norm(a)
    q = np.array([w, *(np.sqrt(1.0 - w * w) * a)])
    if side == "l":  # the physical left hand whose stored (mirrored) quaternion is q
        q = np.array([q[0], q[1], -q[2], -q[3]])
    v, clamped = palm_encode(-q if negate else q, side=side)  # type: ignore[arg-type]
    other, _ = palm_encode(q, side=side)  # type: ignore[arg-type]
    assert bool(clamped) and np.isclose(np.linalg.norm(v), PALM_CLAMP)
    assert float(v @ PALM_HEMISPHERE) >= 0.0
    assert np.array_equal(v, other)  # q and -q store the same value


def test_the_hanging_default_does_not_flip_when_w_crosses_zero() -> None:
    h = PALM_HEMISPHERE
    plus, _ = palm_encode(np.array([1e-12, *h]), side="r")
    minus, _ = palm_encode(np.array([-1e-12, *h]), side="r")
    assert np.array_equal(plus, minus) and np.allclose(plus, 0.98 * h)
