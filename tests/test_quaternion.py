"""Laws and hand-computed cases of posewire.codec.quaternion (spec §3.3, §4.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from posewire.codec import quaternion as qn
from posewire.codec.errors import UsageError
from posewire.codec.ieee import ordered_norm
from posewire.codec.registry import REGISTRY

M = np.diag([-1.0, 1.0, 1.0])
unit_float = st.floats(-1.0, 1.0, allow_nan=False)
raw_quats = arrays(np.float64, 4, elements=unit_float).filter(
    lambda q: float(np.linalg.norm(q)) > 0.1)
vec3 = arrays(np.float64, 3, elements=st.floats(-2.0, 2.0, allow_nan=False))
sides = st.sampled_from(["l", "r"])


def rodrigues(q: np.ndarray) -> np.ndarray:
    """Rotation matrix by the Rodrigues formula from axis-angle (independent of to_matrix)."""
    q = q / np.linalg.norm(q)
    s = np.linalg.norm(q[1:])
    if s == 0.0:
        return np.eye(3)
    axis = q[1:] / s
    angle = 2.0 * math.atan2(s, q[0])
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    out: np.ndarray = np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * (k @ k)
    return out


def same_rotation(a: np.ndarray, b: np.ndarray, tol: float = 1e-9) -> bool:
    return bool(abs(abs(float(np.dot(a, b))) - 1.0) < tol)


# --- hand-computed cases -------------------------------------------------------------

def test_identity_directions_right_and_left() -> None:
    right = qn.palm_directions(qn.IDENTITY, side="r")
    np.testing.assert_array_equal(right.fingers, [0, 1, 0])
    np.testing.assert_array_equal(right.palm_normal, [0, 0, 1])
    np.testing.assert_array_equal(right.thumb, [1, 0, 0])
    left = qn.palm_directions(qn.IDENTITY, side="l")
    np.testing.assert_array_equal(left.fingers, [0, 1, 0])
    np.testing.assert_array_equal(left.palm_normal, [0, 0, 1])
    np.testing.assert_array_equal(left.thumb, [-1, 0, 0])


def test_stored_zero_decodes_to_identity_both_sides() -> None:
    for side in ("l", "r"):
        q, changed = qn.palm_decode([0.0, 0.0, 0.0], side=side)
        np.testing.assert_array_equal(q, [1, 0, 0, 0])
        assert not changed


def test_default_palm_is_the_clamped_half_turn_about_x_plus_z() -> None:
    axis = np.array([1.0, 0.0, 1.0]) / math.sqrt(2.0)
    half_turn = qn.from_axis_angle(axis, math.pi)
    # 180° about (1,0,1)/√2: fingers -Y, palm +X (medial for the right hand), thumb +Z
    d = qn.palm_directions(half_turn, side="r")
    np.testing.assert_allclose(d.fingers, [0, -1, 0], atol=1e-15)
    np.testing.assert_allclose(d.palm_normal, [1, 0, 0], atol=1e-15)
    np.testing.assert_allclose(d.thumb, [0, 0, 1], atol=1e-15)
    v, clamped = qn.palm_encode(half_turn, side="r")
    np.testing.assert_allclose(v, [0.692964645562817, 0.0, 0.692964645562817], atol=1e-12)
    assert bool(clamped)
    stored = [REGISTRY.by_id[f"w_q{c}_r"].row.default for c in "xyz"]
    np.testing.assert_allclose(stored, v, atol=1e-5)
    q, changed = qn.palm_decode(stored, side="r")
    assert not changed  # |v| = 0.69296·√2 = 0.979993 < 0.98
    assert q[0] == pytest.approx(math.sqrt(1 - 2 * 0.69296**2), abs=1e-12)  # 0.1990298
    got_axis, angle = qn.to_axis_angle(q)
    np.testing.assert_allclose(got_axis, axis, atol=1e-12)
    assert math.degrees(float(angle)) == pytest.approx(157.0395352, abs=1e-6)
    # the exact clamp 0.98 gives 2·asin(0.98) = 157.0433181°
    q98, _ = qn.palm_decode(v, side="r")
    assert math.degrees(float(qn.to_axis_angle(q98)[1])) == pytest.approx(157.0433181, abs=1e-6)


def test_reconstruct_rescales_above_one_and_clamps() -> None:
    q, changed = qn.reconstruct_w([3.0, 4.0, 0.0], clamp=None)
    np.testing.assert_allclose(q, [0.0, 0.6, 0.8, 0.0], atol=1e-15)
    assert bool(changed)
    q, changed = qn.reconstruct_w([3.0, 4.0, 0.0])
    np.testing.assert_allclose(q, [math.sqrt(1 - 0.98**2), 0.588, 0.784, 0.0], atol=1e-15)
    assert bool(changed)
    q, changed = qn.reconstruct_w([0.6, 0.0, 0.0])
    np.testing.assert_allclose(q, [0.8, 0.6, 0.0, 0.0], atol=1e-15)
    assert not changed


def test_errors() -> None:
    with pytest.raises(UsageError) as e:
        qn.canonicalize([0.0, 0.0, 0.0, 0.0])
    assert e.value.code == "usage.zero_norm"
    with pytest.raises(UsageError) as e:
        qn.palm_encode([1.0, 0, 0, 0], side="x")  # type: ignore[arg-type]
    assert e.value.code == "usage.bad_option"
    with pytest.raises(UsageError) as e:
        qn.palm_decode([0.0, 0.0], side="r")
    assert e.value.code == "usage.shape"
    with pytest.raises(UsageError) as e:
        qn.palm_decode([math.nan, 0.0, 0.0], side="r")
    assert e.value.code == "usage.not_finite"
    with pytest.raises(UsageError) as e:
        qn.palm_from_directions([0, 1, 0], [0, 2, 0], side="r")
    assert e.value.code == "usage.zero_norm"
    with pytest.raises(UsageError) as e:
        qn.reconstruct_w([0.0, 0.0, 0.0], clamp=1.5)
    assert e.value.code == "usage.out_of_range"  # spec §6.5 rule 3: clamp in [0, 1]
    q, changed = qn.reconstruct_w([0.5, 0.0, 0.0], clamp=0.0)  # 0 is in: v -> 0, reported
    np.testing.assert_array_equal(q, [1.0, 0.0, 0.0, 0.0])
    assert bool(changed)


def test_zero_is_scale_free_for_given_vectors_and_relative_for_derived_ones() -> None:
    """Spec §6.5 rule 4: a given vector is zero only when exactly 0, so tiny
    ones normalize; a derived one is degenerate relative to the vector it came from."""
    np.testing.assert_array_equal(qn.normalize([5e-324, 0.0, 0.0, 0.0]), [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(qn.normalize([0.0, 1e-300, 0.0, 0.0]), [0.0, 1.0, 0.0, 0.0])
    with pytest.raises(UsageError) as e:
        qn.normalize([0.0, 0.0, 0.0, 0.0])
    assert e.value.code == "usage.zero_norm"
    np.testing.assert_allclose(qn.palm_from_directions([0, 1e-300, 0], [0, 1e-300, 1e-300], side="r"),
                               [1.0, 0.0, 0.0, 0.0], atol=1e-15)
    with pytest.raises(UsageError) as e:
        qn.palm_from_directions([0, 1, 0], [0, 1e300, 1e280], side="r")  # parallel to 1e-20
    assert e.value.code == "usage.zero_norm"


def test_canonical_tie_break_at_w_zero() -> None:
    np.testing.assert_array_equal(qn.canonicalize([0.0, 0.0, -1.0, 0.0]), [0, 0, 1, 0])
    np.testing.assert_array_equal(qn.canonicalize([-0.0, 0.0, 0.0, -2.0]), [0, 0, 0, 1])


def test_batch_shapes() -> None:
    q = np.tile(qn.IDENTITY, (2, 5, 1))
    v, clamped = qn.palm_encode(q, side="l")
    assert v.shape == (2, 5, 3) and clamped.shape == (2, 5)
    back, changed = qn.palm_decode(v, side="l")
    assert back.shape == (2, 5, 4) and changed.shape == (2, 5)
    assert qn.to_matrix(q).shape == (2, 5, 3, 3)
    assert qn.from_matrix(qn.to_matrix(q)).shape == (2, 5, 4)


# --- laws -------------------------------------------------------------------------------

@given(raw_quats)
def test_canonical_form(q: np.ndarray) -> None:
    c = qn.canonicalize(q)
    assert c[0] >= 0.0
    assert float(np.linalg.norm(c)) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_array_equal(qn.canonicalize(-q), c)
    np.testing.assert_allclose(qn.canonicalize(c), c, atol=1e-15)


@given(raw_quats, vec3)
def test_rotate_matches_rodrigues_and_matrix(q: np.ndarray, v: np.ndarray) -> None:
    r = rodrigues(q)
    np.testing.assert_allclose(qn.to_matrix(q), r, atol=1e-12)
    np.testing.assert_allclose(qn.rotate(qn.normalize(q), v), r @ v, atol=1e-12)


@given(raw_quats)
def test_matrix_is_a_rotation_and_round_trips(q: np.ndarray) -> None:
    m = qn.to_matrix(q)
    np.testing.assert_allclose(m @ m.T, np.eye(3), atol=1e-12)
    assert float(np.linalg.det(m)) == pytest.approx(1.0, abs=1e-12)
    back = qn.from_matrix(m)
    assert back[0] >= 0.0
    assert same_rotation(back, qn.normalize(q), tol=1e-12)  # sign is free where w ≈ 0


@given(raw_quats, raw_quats, vec3)
def test_multiply_composes(a: np.ndarray, b: np.ndarray, v: np.ndarray) -> None:
    a, b = qn.normalize(a), qn.normalize(b)
    np.testing.assert_allclose(qn.rotate(qn.multiply(a, b), v), qn.rotate(a, qn.rotate(b, v)),
                               atol=1e-12)
    np.testing.assert_allclose(qn.multiply(a, qn.conjugate(a)), qn.IDENTITY, atol=1e-12)


@given(raw_quats)
def test_axis_angle_round_trip(q: np.ndarray) -> None:
    axis, angle = qn.to_axis_angle(q)
    assert 0.0 <= float(angle) <= math.pi + 1e-15
    assert float(np.linalg.norm(axis)) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(qn.from_axis_angle(axis, angle), qn.canonicalize(q), atol=1e-12)


@given(raw_quats)
def test_mirror_is_an_involution_and_conjugates_by_m(q: np.ndarray) -> None:
    np.testing.assert_array_equal(qn.mirror_sagittal(qn.mirror_sagittal(q)), q)
    np.testing.assert_allclose(qn.to_matrix(qn.mirror_sagittal(q)), M @ qn.to_matrix(q) @ M,
                               atol=1e-12)


@given(arrays(np.float64, 3, elements=st.floats(-3.0, 3.0, allow_nan=False)),
       st.one_of(st.none(), st.floats(0.5, 1.0)))
def test_reconstruct_w_laws(v: np.ndarray, clamp: float | None) -> None:
    q, changed = qn.reconstruct_w(v, clamp=clamp)
    limit = 1.0 if clamp is None else clamp
    norm = float(np.linalg.norm(v))
    assert float(np.linalg.norm(q)) == pytest.approx(1.0, abs=1e-12)
    assert q[0] >= 0.0
    assert bool(changed) == (norm > limit)
    assert float(np.linalg.norm(q[1:])) <= limit + 1e-12
    if not changed:
        np.testing.assert_array_equal(q[1:], v)
    else:  # direction kept
        np.testing.assert_allclose(q[1:] * norm, v * limit, atol=1e-12)


@given(raw_quats, sides)
def test_palm_round_trip_below_clamp(q: np.ndarray, side: str) -> None:
    c = qn.canonicalize(q)
    assume(float(ordered_norm(c[1:])) <= 0.98)  # as palm_encode decides (spec §1.5), not BLAS
    v, clamped = qn.palm_encode(q, side=side)  # type: ignore[arg-type]
    assert not clamped
    back, changed = qn.palm_decode(v, side=side)  # type: ignore[arg-type]
    assert not changed
    np.testing.assert_allclose(back, c, atol=1e-12)


@given(raw_quats, sides)
# ties on the hemisphere plane x + z = 0 that BLAS kernels decided differently (spec §1.5)
@example(np.array([0.0, 0.1875, 0.1875, 0.1875]), "l")
@example(np.array([0.0, 0.75, 0.75, 0.75]), "l")
@example(np.array([0.0, 0.75, 0.75, -0.75]), "r")
def test_palm_encode_clamp_is_reported_and_keeps_the_axis(q: np.ndarray, side: str) -> None:
    v, clamped = qn.palm_encode(q, side=side)  # type: ignore[arg-type]
    c = qn.canonicalize(q if side == "r" else qn.mirror_sagittal(q))
    # spec §1.5: lengths and the hemisphere sign in the stated arithmetic, not BLAS
    assert bool(clamped) == (float(ordered_norm(c[1:])) > 0.98)
    assert float(ordered_norm(v)) <= 0.98 + 1e-12
    if clamped:  # the axis is kept, its sign by the hemisphere rule (spec §3.3)
        axis = c[1:] / ordered_norm(c[1:])
        if float(axis[0] + axis[2]) < 0.0:
            axis = -axis
        np.testing.assert_allclose(v / ordered_norm(v), axis, atol=1e-12)
    # what it means: the decoded rotation is the original's, up to the clamp's reach
    # (≤ 22.8° on the default's side of the band, ≤ 45.7° where the hemisphere rule flipped
    # the sign), whichever sign the tie rules chose
    back, _ = qn.palm_decode(v, side=side)  # type: ignore[arg-type]
    unit = q / ordered_norm(q)
    distance = 2.0 * math.acos(min(1.0, abs(float(np.sum(unit * back)))))
    reach = 2.0 * (math.pi - 2.0 * math.asin(0.98))
    assert distance <= (reach + 1e-6 if clamped else 1e-6)


@given(raw_quats, sides)
def test_q_and_minus_q_store_the_same_value(q: np.ndarray, side: str) -> None:
    a, _ = qn.palm_encode(q, side=side)  # type: ignore[arg-type]
    b, _ = qn.palm_encode(-q, side=side)  # type: ignore[arg-type]
    np.testing.assert_array_equal(a, b)


@given(raw_quats)
def test_left_right_mirror_consistency(q: np.ndarray) -> None:
    right, rc = qn.palm_encode(q, side="r")
    left, lc = qn.palm_encode(qn.mirror_sagittal(q), side="l")
    np.testing.assert_array_equal(left, right)
    assert bool(lc) == bool(rc)
    dec_r, _ = qn.palm_decode(right, side="r")
    dec_l, _ = qn.palm_decode(right, side="l")
    np.testing.assert_array_equal(dec_l, qn.mirror_sagittal(dec_r))
    # equal stored values = mirror-image hands (spec §3.2)
    dr, dl = qn.palm_directions(dec_r, side="r"), qn.palm_directions(dec_l, side="l")
    np.testing.assert_allclose(dl.fingers, M @ dr.fingers, atol=1e-12)
    np.testing.assert_allclose(dl.palm_normal, M @ dr.palm_normal, atol=1e-12)
    np.testing.assert_allclose(dl.thumb, M @ dr.thumb, atol=1e-12)


@given(raw_quats, sides)
def test_directions_are_orthonormal_and_invert(q: np.ndarray, side: str) -> None:
    d = qn.palm_directions(q, side=side)  # type: ignore[arg-type]
    frame = np.stack([d.fingers, d.palm_normal, d.thumb])
    np.testing.assert_allclose(frame @ frame.T, np.eye(3), atol=1e-12)
    # right hand: thumb = fingers × palm; left hand: the opposite
    sign = 1.0 if side == "r" else -1.0
    np.testing.assert_allclose(d.thumb, sign * np.cross(d.fingers, d.palm_normal), atol=1e-12)
    back = qn.palm_from_directions(d.fingers, d.palm_normal, side=side)  # type: ignore[arg-type]
    assert same_rotation(back, qn.normalize(q))


@given(vec3, vec3, sides)
def test_from_directions_orthonormalizes(f: np.ndarray, n: np.ndarray, side: str) -> None:
    fn = f / max(float(np.linalg.norm(f)), 1e-300)
    perp = n - np.dot(n, fn) * fn
    assume(float(np.linalg.norm(f)) > 1e-3 and float(np.linalg.norm(perp)) > 1e-3)
    q = qn.palm_from_directions(f, n, side=side)  # type: ignore[arg-type]
    assert q[0] >= 0.0
    d = qn.palm_directions(q, side=side)  # type: ignore[arg-type]
    np.testing.assert_allclose(d.fingers, fn, atol=1e-9)
    np.testing.assert_allclose(d.palm_normal, perp / np.linalg.norm(perp), atol=1e-9)
