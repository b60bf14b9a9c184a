"""Face/mouth/head/gaze maths of the live producer (no inference here: synthetic inputs)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posewire.codec.errors import UsageError
from posewire.codec.euler import head_to_quat
from posewire.codec.morph import (
    FACE_DIM_INDICES,
    N_ARKIT,
    NEGATIVE_GAINS,
    POSITIVE_GAINS,
    dims_to_arkit,
)
from posewire.codec.quaternion import to_matrix
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import N_DIMS
from posewire.producers.face import (
    EYE_POINTS,
    EYEBALL_RADIUS_EYE_WIDTHS,
    GAZE_FULL_DEG,
    blendshape_dims,
    head_from_face_matrix,
    iris_gaze,
    rotation_part,
)

TONGUE = REGISTRY.index("m_tongue")
unit = st.floats(-1.0, 1.0, allow_nan=False)


@given(st.lists(unit, min_size=FACE_DIM_INDICES.size, max_size=FACE_DIM_INDICES.size))
def test_blendshapes_invert_the_registry_mapping(values: list[float]) -> None:
    # spec §4.6: dims -> ARKit weights -> dims is exact in the directions with channels
    # wherever no channel clipped (summed secondary drives, §4.7, can pass 1)
    vec = np.zeros(N_DIMS)
    vec[FACE_DIM_INDICES] = values
    weights, clipped = dims_to_arkit(vec)
    if clipped.any():  # scale into the range where no channel can clip
        vec /= float((POSITIVE_GAINS + NEGATIVE_GAINS).sum(axis=1).max())
        weights, clipped = dims_to_arkit(vec)
    assert not clipped.any()
    back, changed = blendshape_dims(weights)
    again, _ = dims_to_arkit(np.where(np.isfinite(back), back, 0.0))
    assert not changed
    mask = np.ones(N_DIMS, dtype=bool)
    mask[TONGUE] = False  # MediaPipe has no tongueOut: not estimated
    expected, _ = dims_to_arkit(np.where(mask, vec, 0.0))
    np.testing.assert_allclose(again, expected, atol=1e-12)
    assert np.isnan(back[TONGUE])
    others = np.setdiff1d(np.arange(N_DIMS), FACE_DIM_INDICES)
    assert np.isnan(back[others]).all()


def test_blendshapes_out_of_range_are_clamped_and_reported() -> None:
    weights = np.zeros(N_ARKIT)
    weights[0] = 1.5
    weights[1] = np.nan
    vec, changed = blendshape_dims(weights)
    assert len(changed) >= 2
    assert np.nanmax(np.abs(vec)) <= 1.0
    with pytest.raises(UsageError) as err:
        blendshape_dims(np.zeros(51))
    assert err.value.code == "usage.shape"


def _rot(n: list[float]) -> np.ndarray:
    return np.asarray(to_matrix(head_to_quat(np.array(n))))


@given(st.lists(unit, min_size=3, max_size=3), st.floats(0.2, 5.0))
def test_head_from_face_matrix_recovers_the_rotation_whatever_the_scale(n: list[float], scale: float) -> None:
    matrix = np.eye(4)
    matrix[:3, :3] = scale * _rot(n)
    matrix[:3, 3] = (1.0, -2.0, -40.0)
    got, clamped = head_from_face_matrix(matrix)
    assert not bool(clamped)
    np.testing.assert_allclose(got, n, atol=1e-9)


@given(st.lists(st.floats(-0.5, 0.5), min_size=3, max_size=3), st.lists(st.floats(-0.4, 0.4), min_size=3, max_size=3))
def test_head_is_relative_to_the_body(head: list[float], body: list[float]) -> None:
    body_rot = _rot(body)
    matrix = np.eye(4)
    matrix[:3, :3] = body_rot @ _rot(head)
    got, _ = head_from_face_matrix(matrix, body_rot)
    np.testing.assert_allclose(got, head, atol=1e-9)


def test_head_of_a_non_finite_matrix_is_nan() -> None:
    got, clamped = head_from_face_matrix(np.full((4, 4), np.nan))
    assert np.isnan(got).all() and not bool(clamped)


def test_rotation_part_is_a_rotation() -> None:
    rng = np.random.default_rng(3)
    m = rng.normal(size=(10, 3, 3))
    r = rotation_part(m)
    np.testing.assert_allclose(r @ np.swapaxes(r, -1, -2), np.broadcast_to(np.eye(3), r.shape), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(r), 1.0, atol=1e-12)


def _eye_mesh(yaw_deg: float, pitch_deg: float, head: np.ndarray) -> np.ndarray:
    """A 478-point mesh with only the eye points set (head frame -> camera by ``head``)."""
    mesh = np.zeros((478, 3))
    width = 30.0
    radius = EYEBALL_RADIUS_EYE_WIDTHS * width
    for side, (outer, inner, iris, upper, lower) in EYE_POINTS.items():
        cx = 32.0 if side == "l" else -32.0
        out_x = cx + (width / 2 if side == "l" else -width / 2)
        in_x = cx - (width / 2 if side == "l" else -width / 2)
        local = {outer: (out_x, 0.0, 0.0), inner: (in_x, 0.0, 0.0), upper: (cx, 5.0, 0.0), lower: (cx, -5.0, 0.0),
                 iris: (cx + radius * np.sin(np.radians(yaw_deg)), radius * np.sin(np.radians(pitch_deg)), 6.0)}
        for index, p in local.items():
            mesh[index] = head @ np.array(p) + np.array([100.0, 50.0, -400.0])
    return mesh


@given(st.floats(-29.0, 29.0), st.floats(-29.0, 29.0), st.lists(st.floats(-0.5, 0.5), min_size=3, max_size=3))
def test_iris_gaze_reads_the_eye_rotation_in_the_head_frame(yaw: float, pitch: float, head_n: list[float]) -> None:
    head = _rot(head_n)
    got, clipped = iris_gaze(_eye_mesh(yaw, pitch, head), head)
    assert not bool(clipped)
    np.testing.assert_allclose(got, [yaw / GAZE_FULL_DEG, pitch / GAZE_FULL_DEG], atol=1e-9)


def test_iris_gaze_clips_and_reports() -> None:
    head = np.eye(3)
    got, clipped = iris_gaze(_eye_mesh(60.0, 0.0, head), head)
    assert bool(clipped) and got[0] == 1.0
    with pytest.raises(UsageError):
        iris_gaze(np.zeros((468, 3)), head)


@given(st.lists(st.floats(-0.9, 0.9), min_size=3, max_size=3))
def test_the_face_transform_reaches_the_landmark_head_exactly(n: list[float]) -> None:
    # an upright body squarely facing the camera: the body frame is the camera's y-up frame,
    # so the head the landmark encoder computes from the four synthetic points is R itself
    from posewire.producers.landmarks import HolisticLandmarks, landmarks_to_vectors
    from posewire.producers.live import _axes_as_face_points

    pose = np.zeros((1, 33, 3))
    pose[0, 11], pose[0, 12] = (0.18, -0.5, 0.0), (-0.18, -0.5, 0.0)  # MediaPipe axes: y down
    pose[0, 23], pose[0, 24] = (0.1, 0.0, 0.0), (-0.1, 0.0, 0.0)
    pose[0, 0] = (0.0, -0.65, -0.1)  # the nose toward the camera
    nan = np.full((1, 21, 3), np.nan)
    lm = HolisticLandmarks(pose, np.ones((1, 33)), nan, nan, _axes_as_face_points(_rot(n)), None)
    vec = landmarks_to_vectors(lm).vectors[0]
    got = [vec[REGISTRY.index(d)] for d in ("h_yaw", "h_pitch", "h_roll")]
    np.testing.assert_allclose(got, n, atol=1e-9)


# ---------------------------------------------------------------- neutral face (spec §7.3)

_unit_interval = st.floats(-1.0, 1.0, allow_nan=False)


@given(_unit_interval, _unit_interval, _unit_interval)
def test_relative_to_neutral_laws(n: float, m: float, b: float) -> None:
    from posewire.producers.face import NEUTRAL_LIMIT, relative_to_neutral

    def f(x: float) -> float:
        return float(relative_to_neutral(np.array([x]), np.array([b]))[0])

    clipped = min(max(b, -NEUTRAL_LIMIT), NEUTRAL_LIMIT)
    assert f(clipped) == 0.0  # the neutral is 0
    assert f(1.0) == 1.0 and f(-1.0) == -1.0  # the rails stay
    assert -1.0 <= f(n) <= 1.0  # bounded
    if n <= m:
        assert f(n) <= f(m)  # monotonic
    assert relative_to_neutral(np.array([n]), np.array([0.0]))[0] == n  # a zero neutral changes nothing
