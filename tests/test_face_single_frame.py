"""The live encoder's one-frame face path and its incremental calibration equal the batch
functions they stand for (the live encoder's one-frame path, spec §7): ``rotation_part1``, ``iris_gaze1``,
``blendshape_dims1`` (``arkit_to_dims1``) against ``rotation_part``, ``iris_gaze``,
``blendshape_dims`` (``arkit_to_dims``) to 1e-9 with equal NaN, clip and report entries
(spec §4.4, §4.6, spec/07-camera.md); the whole :class:`LiveEncoder` against itself on
the batch kernels; :class:`LiveCalibration` against :func:`estimate_calibration` of its
window (spec §4.1)."""

from __future__ import annotations

import contextlib
import math
from dataclasses import fields

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from posewire.codec.errors import UsageError
from posewire.codec.morph import FACE_DIM_INDICES, N_ARKIT, arkit_to_dims, arkit_to_dims1
from posewire.codec.quaternion import Mat3, to_matrix
from posewire.groundtruth import noise, random_vectors, render
from posewire.producers import face, live
from posewire.producers.face import (
    EYE_MESH_INDEX,
    blendshape_dims,
    blendshape_dims1,
    iris_gaze,
    iris_gaze1,
    rotation_part,
    rotation_part1,
)
from posewire.producers.hand import DEPTH_GAIN_MIN_FRAMES, bone_length_ratios, depth_gain_spread
from posewire.producers.landmarks import (
    HolisticLandmarks,
    LandmarkCalibration,
    calibration_samples,
    estimate_calibration,
)
from posewire.producers.landmarks_single import prepare1, samples1
from posewire.producers.live import LiveCalibration, LiveEncoder
from posewire.producers.mediapipe_source import Observation

finite = st.floats(-3.0, 3.0, allow_nan=False)
quaternion = st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=4, max_size=4).filter(
    lambda q: sum(x * x for x in q) > 1e-3)


def _rotation(q: list[float]) -> np.ndarray:
    return np.asarray(to_matrix(np.asarray(q) / np.linalg.norm(q)))


# ------------------------------------------------------------------ rotation_part1


@given(quaternion, st.floats(0.05, 20.0), st.lists(st.floats(-0.3, 0.3), min_size=9, max_size=9),
       st.lists(st.floats(-100.0, 100.0), min_size=3, max_size=3))
def test_rotation_part1_is_the_svd_polar_factor(q: list[float], scale: float, wobble: list[float],
                                                 shift: list[float]) -> None:
    # spec §4.4: the head is the nearest rotation to the face transform's 3×3 (scale dropped)
    m = np.eye(4)
    m[:3, :3] = scale * _rotation(q) @ (np.eye(3) + np.reshape(wobble, (3, 3)))
    m[:3, 3] = shift
    assume(np.linalg.cond(m[:3, :3]) < 1e4)
    np.testing.assert_allclose(np.array(rotation_part1(m)), rotation_part(m), rtol=0, atol=1e-9)


def _cofactor_det(m: np.ndarray) -> float:
    # the determinant rotation_part1 decides on (cofactors of the first row, in its order);
    # LAPACK's det differs in the last bits between BLAS kernels, and near 0 in its sign
    (a, b, c), (d, e, f), (g, h, i) = m.tolist()
    return float(a * (e * i - f * h) + b * (f * g - d * i) + c * (d * h - e * g))


@given(st.lists(finite, min_size=9, max_size=9))
# a nearly singular matrix whose LAPACK det is ≤ 0 but whose cofactor det is > 0 (make fuzz)
@example([2.9041797180828385e-136, 1.0, 1.0, -2.9041797180828385e-136, 0.0, 0.0,
          2.9041797180828385e-136, -1.3299609381843177e-67, 0.0])
def test_rotation_part1_of_any_matrix(values: list[float]) -> None:
    # det ≤ 0 (as rotation_part1 computes it): the SVD decides (the same result exactly);
    # det > 0: the Newton iteration, equal to the SVD's polar factor where it is well defined
    m = np.reshape(values, (3, 3))
    assume(_cofactor_det(m) <= 0 or np.linalg.cond(m) < 1e4)
    np.testing.assert_allclose(np.array(rotation_part1(m)), rotation_part(m), rtol=0, atol=1e-9)


def test_rotation_part1_hands_reflections_and_singular_matrices_to_the_svd() -> None:
    for m in (np.diag([1.0, 1.0, -1.0]), np.diag([2.0, 1.0, 0.0]), np.zeros((3, 3)), -np.eye(3)):
        np.testing.assert_array_equal(np.array(rotation_part1(m)), rotation_part(m))
        assert np.linalg.det(np.array(rotation_part1(m))) == pytest.approx(1.0)


# ------------------------------------------------------------------ iris_gaze1


def _eyes(draw_points: list[float], spread: float) -> np.ndarray:
    # the 10 eye points: corners, iris, lids of each eye, around a plausible layout
    base = np.array([[-0.6, 0, 0], [-0.2, 0, 0], [-0.4, 0, 0.05], [-0.4, 0.08, 0], [-0.4, -0.08, 0],
                     [0.6, 0, 0], [0.2, 0, 0], [0.4, 0, 0.05], [0.4, 0.08, 0], [0.4, -0.08, 0]])
    out: np.ndarray = base + spread * np.reshape(draw_points, (10, 3))
    return out


@given(st.lists(st.floats(-1.0, 1.0), min_size=30, max_size=30), st.floats(0.0, 0.5), quaternion)
def test_iris_gaze1_equals_iris_gaze(points: list[float], spread: float, q: list[float]) -> None:
    eyes = _eyes(points, spread)
    rot = _rotation(q)
    mesh = np.full((478, 3), np.nan)
    mesh[EYE_MESH_INDEX] = eyes
    expected, clipped = iris_gaze(mesh, rot)
    got, got_clipped = iris_gaze1(eyes.tolist(), _mat3(rot))
    np.testing.assert_allclose(np.array(got), expected, rtol=0, atol=1e-9)
    assert got_clipped == bool(clipped)


def test_iris_gaze1_degenerate_eyes() -> None:
    rot = np.eye(3)
    for eyes in (np.zeros((10, 3)), np.full((10, 3), np.nan), np.full((10, 3), np.inf),
                 _eyes([0.0] * 30, 0.0) * 1e-320):  # coincident, missing, infinite, underflowing corners
        mesh = np.full((478, 3), np.nan)
        mesh[EYE_MESH_INDEX] = eyes
        with np.errstate(invalid="ignore"):  # inf − inf
            expected, clipped = iris_gaze(mesh, rot)
        got, got_clipped = iris_gaze1(eyes.tolist(), _mat3(rot))
        np.testing.assert_array_equal(np.array(got), expected)
        assert got_clipped == bool(clipped)


def _mat3(m: np.ndarray) -> Mat3:
    (a, b, c), (d, e, f), (g, h, i) = np.asarray(m, dtype=np.float64).tolist()
    return ((a, b, c), (d, e, f), (g, h, i))


# ------------------------------------------------------------------ blendshape_dims1

weight = st.one_of(st.floats(0.0, 1.0), st.floats(-0.5, 1.5), st.sampled_from([math.nan, math.inf, -math.inf]))


@given(st.lists(st.one_of(st.floats(0.0, 1.0), weight), min_size=N_ARKIT, max_size=N_ARKIT))
def test_blendshape_dims1_equals_blendshape_dims(weights: list[float]) -> None:
    # spec §4.6: the same solve, clamps and clips, the same names in the same order
    w = np.array(weights)
    vec, names = blendshape_dims(w)
    face, names1 = blendshape_dims1(w)
    np.testing.assert_allclose(np.array(face), vec[FACE_DIM_INDICES], rtol=0, atol=1e-9)
    assert names1 == names
    solved, report = arkit_to_dims(w, policy="clamp")
    values, changed = arkit_to_dims1(w)
    np.testing.assert_allclose(np.array(values), solved[FACE_DIM_INDICES], rtol=0, atol=1e-9)
    assert changed == report.channels()


def test_arkit_to_dims1_rejects_a_batch() -> None:
    with pytest.raises(UsageError) as err:
        arkit_to_dims1(np.zeros((2, N_ARKIT)))
    assert err.value.code == "usage.shape"


# ------------------------------------------------------------------ the whole live encoder


def _frames(seed: int, batch: int) -> list[HolisticLandmarks]:
    rng = np.random.default_rng(seed)
    gt = noise(render(random_vectors(rng, batch), view_yaw_deg=rng.uniform(-40, 40, batch)).landmarks, rng)
    out = []
    for i in range(batch):
        pose = gt.pose_world[i:i + 1].copy()
        if rng.random() < 0.15:  # no body this frame
            pose[:] = np.nan
        elif rng.random() < 0.1:  # hips missing: the upright chest, no torso length (spec §4.5)
            pose[:, [23, 24]] = np.nan
        scale = None if gt.hand_scale is None else gt.hand_scale[i:i + 1]
        vis = gt.pose_visibility[i:i + 1].copy()
        vis[:, rng.integers(0, 33, 4)] = rng.random(4)  # some points below the threshold
        out.append(HolisticLandmarks(pose, vis, gt.left_hand[i:i + 1], gt.right_hand[i:i + 1], None, scale))
    return out


def _observation(lm: HolisticLandmarks, rng: np.random.Generator) -> Observation:
    matrix = None
    if rng.random() < 0.85:
        matrix = np.eye(4)
        q = rng.normal(size=4)
        matrix[:3, :3] = rng.uniform(0.5, 2.0) * _rotation(list(q)) @ (np.eye(3) + rng.normal(scale=0.05, size=(3, 3)))
        matrix[:3, 3] = rng.normal(scale=30, size=3)
    mesh = None
    if rng.random() < 0.85:
        mesh = rng.normal(scale=50, size=(478, 3))
        mesh[EYE_MESH_INDEX] = _eyes(list(rng.uniform(-1, 1, 30)), 0.3) * 40
    weights = None
    if rng.random() < 0.85:
        weights = rng.uniform(-0.2, 1.2, N_ARKIT)  # some outside [0, 1]: clamped and reported
        if rng.random() < 0.7:
            weights = np.clip(weights, 0.0, 1.0)
    return Observation(lm, np.full((33, 3), np.nan), mesh, weights, matrix, {}, {}, (512, 512))


def _batch_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """The live module's one-frame kernels replaced by the batch functions."""
    def rotation(m: np.ndarray) -> Mat3:
        return _mat3(rotation_part(m))

    def gaze(eyes: list[list[float]], rot: Mat3) -> tuple[tuple[float, float], bool]:
        mesh = np.full((478, 3), np.nan)
        mesh[EYE_MESH_INDEX] = eyes
        g, clipped = iris_gaze(mesh, np.array(rot))
        return (float(g[0]), float(g[1])), bool(clipped)

    def blend(w: np.ndarray) -> tuple[list[float], list[str]]:
        vec, names = blendshape_dims(w)
        return vec[FACE_DIM_INDICES].tolist(), names

    monkeypatch.setattr(live, "rotation_part1", rotation)
    monkeypatch.setattr(live, "iris_gaze1", gaze)
    monkeypatch.setattr(live, "blendshape_dims1", blend)


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_live_encoder_equals_itself_on_the_batch_kernels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    observations = [_observation(lm, rng) for lm in _frames(seed, 24)]
    fast = LiveEncoder(live=LiveCalibration(window=10, every=4))
    got = [fast.encode(o) for o in observations]
    with pytest.MonkeyPatch.context() as mp:
        _batch_kernels(mp)
        assert live.rotation_part1 is not face.rotation_part1
        slow = LiveEncoder(live=LiveCalibration(window=10, every=4))
        expected = [slow.encode(o) for o in observations]
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(np.isnan(a.vector), np.isnan(b.vector))
        np.testing.assert_allclose(a.vector, b.vector, rtol=0, atol=1e-9, equal_nan=True)
        assert a.conditions == b.conditions and a.tracked == b.tracked and a.calibration == b.calibration
    assert fast.report == slow.report


# ------------------------------------------------------------------ live calibration


def _stacked(frames: list[HolisticLandmarks]) -> HolisticLandmarks:
    def stack(name: str) -> np.ndarray:
        return np.concatenate([getattr(f, name) for f in frames])

    scales = np.concatenate([np.full(1, np.nan) if f.hand_scale is None else f.hand_scale for f in frames])
    return HolisticLandmarks(stack("pose_world"), stack("pose_visibility"), stack("left_hand"), stack("right_hand"),
                             None, scales)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.integers(1, 6))
def test_live_calibration_is_the_estimate_of_its_window(seed: int, window: int, every: int) -> None:
    # spec §4.1: the running estimate = estimate_calibration of the last `window` frames with a body
    frames = _frames(seed, 30)
    cal = LiveCalibration(window=window, every=every)
    with_body: list[HolisticLandmarks] = []
    for i, frame in enumerate(frames):
        cal.update(frame)
        if np.isfinite(frame.pose_world[0, [11, 12, 23, 24]]).all():
            with_body.append(frame)
        if i % 4 != 3 or not with_body:
            continue
        try:
            expected = estimate_calibration(_stacked(with_body[-window:]))
        except UsageError:
            with pytest.raises(UsageError):
                cal._estimate()
            continue
        got = cal._estimate()
        for f in fields(expected.calibration):
            a, b = getattr(got.calibration, f.name), getattr(expected.calibration, f.name)
            assert (a is None) == (b is None)
            if a is not None:
                assert a == pytest.approx(b, rel=0, abs=1e-9)
        assert got.notes == expected.notes


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_samples1_equals_the_batch_rows(seed: int) -> None:
    # spec §4.1: the live calibration measures each frame as it arrives, on the single-frame path
    for frame in _frames(seed, 12):
        got = samples1(prepare1(frame, visibility_threshold=0.5), visibility_threshold=0.5,
                       hand_scale=math.nan if frame.hand_scale is None else float(frame.hand_scale[0]))
        batch = calibration_samples(_stacked([frame]))
        assert got.valid == bool(batch.valid[0])
        if got.valid:
            np.testing.assert_allclose(np.array(got.shoulders), batch.shoulders[0], rtol=0, atol=1e-9)
        for mine, theirs in ((got.trunk, batch.trunk[0]), (got.arm, batch.arm[0]), (got.hand, batch.hand[0])):
            np.testing.assert_allclose(np.array(mine, dtype=float), theirs, rtol=0, atol=1e-9, equal_nan=True)
        for hand, column in ((got.right, 0), (got.left, 1)):
            bones = bone_length_ratios(np.full((1, 21, 3), np.nan) if hand is None else np.array([hand]))
            np.testing.assert_array_equal(bones[0], batch.bones[0, column])


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.integers(1, 6))
def test_spread_job_equals_the_estimate_at_once(seed: int, window: int, every: int) -> None:
    # spec §4.1: each step of a running estimate, then its result, against estimate_calibration
    # of the window it started on (distances to 1e-9, notes and depth gains equal)
    frames = _frames(seed, 30)
    cal = LiveCalibration(window=window, every=every, bone_frames=2)
    with_body: list[HolisticLandmarks] = []
    for frame in frames:
        cal.update(frame)
        if np.isfinite(frame.pose_world[0, [11, 12, 23, 24]]).all():
            with_body.append(frame)
        if cal._job is None or not with_body:
            continue
        job, cal._job = cal._job, None  # taken over here: run to its end at once
        try:
            expected = estimate_calibration(_stacked(with_body[-window:]))
        except UsageError:
            with pytest.raises(UsageError):
                cal._finish(job)
            continue
        got = cal._finish(job)
        for f in fields(expected.calibration):
            a, b = getattr(got.calibration, f.name), getattr(expected.calibration, f.name)
            assert (a is None) == (b is None)
            if a is not None:
                assert a == pytest.approx(b, rel=0, abs=1e-9)
        assert got.notes == expected.notes and got.hand_depth_gain == expected.hand_depth_gain


def _same_estimate(got: LandmarkCalibration, expected: LandmarkCalibration) -> None:
    for f in fields(expected.calibration):
        a, b = getattr(got.calibration, f.name), getattr(expected.calibration, f.name)
        assert (a is None) == (b is None)
        if a is not None:
            assert a == pytest.approx(b, rel=0, abs=1e-9)
    assert got.notes == expected.notes and got.hand_depth_gain == expected.hand_depth_gain


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.integers(1, 6), st.one_of(st.none(), st.integers(1, 4)))
def test_spread_estimates_run_across_frames(seed: int, window: int, every: int, bone_frames: int | None) -> None:
    # spec §4.1: a job stepped one frame at a time while new frames arrive (finished early when
    # the next is due) takes the estimate of the window it started on
    frames = _frames(seed, 40)
    cal = LiveCalibration(window=window, every=every, bone_frames=bone_frames)
    taken: list[LandmarkCalibration] = []
    accept = cal._accept
    cal._accept = lambda estimate: (taken.append(estimate), accept(estimate))[1]  # type: ignore[method-assign]
    with_body: list[HolisticLandmarks] = []
    pending: list[LandmarkCalibration | None] = []  # the running jobs' expected estimates, oldest first
    for frame in frames:
        job, first, count = cal._job, cal.current is None, len(taken)
        cal.update(frame)
        if np.isfinite(frame.pose_world[0, [11, 12, 23, 24]]).all():
            with_body.append(frame)
        if first and len(taken) > count:  # the first estimate, at once
            _same_estimate(taken[-1], estimate_calibration(_stacked(with_body[-window:])))
        elif job is not None and cal._job is not job:  # the job ended on this frame
            want = pending.pop(0)
            assert (len(taken) > count) == (want is not None)
            if want is not None:
                _same_estimate(taken[-1], want)
        if cal._job is not None and cal._job is not job:
            try:
                pending.append(estimate_calibration(_stacked(with_body[-window:])))
            except UsageError:
                pending.append(None)


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(10, 40), st.integers(1, 12))
def test_running_depth_gain_sums_equal_the_window_reduction(seed: int, window: int, every: int) -> None:
    # spec §4.3: the depth gains' running sums (rows entering and leaving the window, rows
    # taken again by the ring) give hand.depth_gain_spread of the window to round-off
    frames = _frames(seed, 90)
    cal = LiveCalibration(window=window, every=every, bone_frames=None if seed % 2 else 3)
    checked = 0
    for frame in frames:
        cal.update(frame)
        if cal._job is not None:  # taken over here: run to its end at once
            job, cal._job = cal._job, None
            with contextlib.suppress(UsageError):
                cal._finish(job)
        if cal._count == 0:
            continue
        n = min(cal._count, cal.window)
        rows = (cal._count - n + np.arange(n)) % cal._size
        if not cal._measured[rows].all():
            continue
        cal._depth_gains(rows)
        for column in (0, 1):
            usable = rows[np.isfinite(cal._bones[rows, column, 0, 0])]
            got = cal._spread(column, rows[:2])
            want = depth_gain_spread(cal._bones[rows, column])  # the window's rows in order (runs of three)
            if usable.size < DEPTH_GAIN_MIN_FRAMES:
                assert got is None and want is None
                continue
            assert got is not None and want is not None
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
            checked += 1
    assert checked > 0
