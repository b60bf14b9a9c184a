"""The codec's one-value kernels in Python floats equal the batch kernels they restate
(spec §3.3, §4.1, §4.2, §4.4): the single-frame encoder and decoder rely on it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from posewire.codec import quaternion as qn
from posewire.codec.calibration import REFERENCE_CALIBRATION, arm_to_normalized, arm_to_normalized1, units
from posewire.codec.elbow import FIXED_SENSE, LATERAL, spread_angle1, spread_angle_unchecked, spread_basis1
from posewire.codec.elbow import spread_basis_unchecked as spread_basis_batch
from posewire.codec.euler import (
    matrix_to_body,
    matrix_to_body1,
    matrix_to_euler,
    matrix_to_euler1,
    matrix_to_head,
    matrix_to_head1,
)

finite = st.floats(-10.0, 10.0, allow_nan=False) | st.sampled_from([0.0, -0.0])
vec3 = st.tuples(finite, finite, finite)
quat = st.tuples(finite, finite, finite, finite).filter(lambda q: math.sqrt(sum(c * c for c in q)) > 1e-3)
#: exact values where the branch rules bite: zeros, axes, ties
special = st.sampled_from([0.0, 1.0, -1.0, 0.5, -0.5])
quat_special = st.tuples(special, special, special, special).filter(lambda q: any(q))
sides = st.sampled_from(["l", "r"])


def _close(a: object, b: object, tol: float = 1e-12) -> None:
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=0, atol=tol)


def _same_zeros(a: object, b: object) -> None:
    # sums start from +0.0 as numpy's: a zero result has numpy's sign (atan2 at ±π)
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    zero = (x == 0.0) & (y == 0.0)
    np.testing.assert_array_equal(np.signbit(x[zero]), np.signbit(y[zero]))


@given(vec3, vec3)
def test_vector_helpers(a: qn.Vec3, b: qn.Vec3) -> None:
    _close(qn.cross1(a, b), qn.cross_unchecked(np.array(a), np.array(b)))
    _close(qn.dot1(a, b), np.dot(a, b), 1e-10)
    _same_zeros(qn.dot1(a, b), (np.array(a) * np.array(b)).sum(-1))
    _close(qn.sub1(a, b), np.subtract(a, b))
    _close(qn.norm1(a), np.linalg.norm(a))
    u = qn.unit1(b, 1e-9)
    if np.linalg.norm(b) > 1e-9:
        _close(u, np.array(b) / np.linalg.norm(b))
        _close(qn.reject1(a, u), np.array(a) - np.dot(a, u) * np.array(u), 1e-10)
        ua = np.array(u)
        _same_zeros(qn.reject1(a, u), np.array(a) - (np.array(a) * ua).sum(-1) * ua)
    else:
        assert all(math.isnan(c) for c in u)


@given(quat | quat_special, vec3)
def test_to_frame(q: qn.Quat, v: qn.Vec3) -> None:
    m = qn.to_matrix(np.array(q))
    axes = tuple(tuple(c) for c in m.T.tolist())  # the columns
    expected = np.einsum("bji,bj->bi", m[None], np.array(v)[None])[0]
    _close(qn.to_frame1(axes, v), expected)  # type: ignore[arg-type]
    _same_zeros(qn.to_frame1(axes, v), expected)  # type: ignore[arg-type]


@given(quat | quat_special, quat | quat_special, vec3)
def test_quaternion_products(a: qn.Quat, b: qn.Quat, v: qn.Vec3) -> None:
    _close(qn.multiply1(a, b), qn.multiply_unchecked(np.array(a), np.array(b)), 1e-10)
    unit = np.array(a) / np.linalg.norm(a)
    _close(qn.rotate1(tuple(unit.tolist()), v), qn.rotate_unchecked(unit, np.array(v)), 1e-10)  # type: ignore[arg-type]
    _close(qn.to_matrix1(a), qn.to_matrix(np.array(a)))
    assert qn.canonicalize1(a) == pytest.approx(tuple(qn.canonicalize_unchecked(np.array(a)).tolist()), abs=1e-15)


@given(quat | quat_special)
def test_from_matrix_every_branch(q: qn.Quat) -> None:
    m = qn.to_matrix(np.array(q))
    rows = tuple(tuple(r) for r in m.tolist())
    _close(qn.from_matrix1(rows), qn.from_matrix_unchecked(m))  # type: ignore[arg-type]


@given(quat | quat_special, sides, st.sampled_from([qn.PALM_CLAMP, 0.5, 1.0]))
# hemisphere ties (x + z = 0 after the mirror) decided alike by both paths (spec §1.5, §3.3)
@example((0.0, 0.1875, 0.1875, 0.1875), "l", qn.PALM_CLAMP)
@example((0.0, 0.75, 0.75, 0.75), "l", qn.PALM_CLAMP)
def test_palm_encode(q: qn.Quat, side: str, limit: float) -> None:
    v1, clamped1 = qn.palm_encode1(q, side=side, limit=limit)  # type: ignore[arg-type]
    v, clamped = qn.palm_encode_unchecked(np.array(q), side=side, limit=limit)  # type: ignore[arg-type]
    _close(v1, v)
    assert clamped1 == bool(clamped)


@given(vec3, vec3)
def test_palm_from_axes(a: qn.Vec3, b: qn.Vec3) -> None:
    y = qn.unit1(a, 1e-6)
    z = qn.unit1(qn.reject1(b, y), 1e-6) if not math.isnan(y[0]) else y
    if math.isnan(z[0]):
        return
    _close(qn.palm_from_axes1(y, z), qn.palm_from_axes_unchecked(np.array(y), np.array(z)))


#: arm directions along the reference, +Z and −Y take the fallbacks (spec §4.1)
arm_axes = vec3.filter(lambda v: math.sqrt(sum(c * c for c in v)) > 1e-3) | st.sampled_from(
    [(0.0, -1.0, -0.25), (0.0, 1.0, 0.25), (0.0, 0.0, 1.0), (0.0, -1.0, 0.0), (1.0, 0.0, 0.0), (-1.0, 0.0, 0.0)])


@given(arm_axes, vec3, sides)
def test_spread(axis: qn.Vec3, offset: qn.Vec3, side: str) -> None:
    u = np.array(axis) / np.linalg.norm(axis)
    u1 = (float(u[0]), float(u[1]), float(u[2]))
    r1, t1 = spread_basis1(u1, qn.as_vec1(LATERAL[side]), FIXED_SENSE[side])
    r, t = spread_basis_batch(u, LATERAL[side], FIXED_SENSE[side])
    _close(r1, r)
    _close(t1, t)
    _close(spread_angle1(u1, offset, side=side), spread_angle_unchecked(u, np.array(offset), side=side),  # type: ignore[arg-type]
           1e-9)


@given(quat | quat_special | st.sampled_from([(1.0, 1.0, 0.0, 0.0), (1.0, -1.0, 0.0, 0.0)]))
def test_matrix_to_euler_incl_gimbal(q: qn.Quat) -> None:
    m = qn.to_matrix(np.array(q))
    rows = tuple(tuple(r) for r in m.tolist())
    _close(matrix_to_euler1(rows), matrix_to_euler(m), 1e-9)  # type: ignore[arg-type]
    for one, batch in ((matrix_to_head1, matrix_to_head), (matrix_to_body1, matrix_to_body)):
        n1, c1 = one(rows)  # type: ignore[arg-type]
        n, c = batch(m)
        _close(n1, n, 1e-9)
        assert c1 == bool(c)


@given(vec3, sides)
def test_arm_to_normalized(p: qn.Vec3, side: str) -> None:
    u = units(REFERENCE_CALIBRATION)
    _close(arm_to_normalized1(p, u, side=side), arm_to_normalized(np.array(p), u, side=side))  # type: ignore[arg-type]
