"""One-Euro filter of pose vectors (posewire.producers.filter): laws and the jitter report."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posewire.codec.errors import UsageError
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import DEFAULTS, N_DIMS
from posewire.producers.filter import VISIBILITY_HOLD, OneEuroParams, VectorFilter, VisibilityHold, filter_vectors

PALM_R = [REGISTRY.index(f"w_q{a}_r") for a in "xyz"]
FINGER = REGISTRY.index("g_index_curl_r")


@settings(max_examples=40)
@given(st.floats(-1, 1), st.floats(0.01, 0.2), st.integers(2, 30))
def test_a_constant_signal_passes_unchanged(value: float, dt: float, frames: int) -> None:
    # law: a steady value is a fixed point of the filter (no lag, no bias)
    vec = np.tile(DEFAULTS, (frames, 1))
    vec[:, FINGER] = value
    out = filter_vectors(vec, np.arange(frames) * dt).vectors
    np.testing.assert_allclose(out, vec, atol=1e-12)


@settings(max_examples=40)
@given(st.integers(0, 2**32 - 1))
def test_output_stays_between_the_inputs_and_palm_stays_a_rotation(seed: int) -> None:
    # laws: each filtered scalar is a convex mix of the previous output and the input, so
    # it stays within the range of the inputs so far; the palm stays a unit rotation
    rng = np.random.default_rng(seed)
    vec = np.tile(DEFAULTS, (30, 1))
    vec[:, FINGER] = rng.uniform(-1, 1, 30)
    palm = rng.normal(size=(30, 3))
    vec[:, PALM_R] = 0.9 * palm / np.linalg.norm(palm, axis=-1, keepdims=True) * rng.uniform(0, 1, (30, 1))
    out = filter_vectors(vec, np.cumsum(rng.uniform(0.01, 0.1, 30))).vectors
    for k in range(30):
        assert vec[: k + 1, FINGER].min() - 1e-12 <= out[k, FINGER] <= vec[: k + 1, FINGER].max() + 1e-12
    assert (np.linalg.norm(out[:, PALM_R], axis=-1) <= 1.0 + 1e-12).all()


def test_noise_is_reduced_and_reported() -> None:
    rng = np.random.default_rng(1)
    vec = np.tile(DEFAULTS, (200, 1))
    fingers = [d.index for d in REGISTRY.dimensions if d.row.group == "fingers"]
    vec[:, fingers] = 0.3 + rng.normal(0, 0.05, (200, len(fingers)))
    vec[:, PALM_R] = np.array([0.2, 0.1, 0.3]) + rng.normal(0, 0.03, (200, 3))
    res = filter_vectors(vec, np.arange(200) / 30.0)
    assert res.jitter_after["fingers"] < 0.4 * res.jitter_before["fingers"]
    assert res.jitter_after["palm"] < 0.5 * res.jitter_before["palm"]
    assert abs(np.mean(res.vectors[50:, FINGER]) - 0.3) < 0.02  # no bias


def test_nan_passes_and_restarts_the_dim() -> None:
    f = VectorFilter()
    v = DEFAULTS.copy()
    v[FINGER] = 0.8
    f(0.0, v)
    lost = v.copy()
    lost[FINGER] = np.nan
    lost[PALM_R] = np.nan
    out = f(0.04, lost)
    assert np.isnan(out[FINGER]) and np.isnan(out[PALM_R]).all()
    back = v.copy()
    back[FINGER] = -0.5
    assert f(0.08, back)[FINGER] == -0.5  # not dragged from where it was lost


def test_bad_input_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as e:
        OneEuroParams(min_cutoff=0.0)
    assert e.value.code == "usage.bad_option"
    f = VectorFilter()
    f(1.0, DEFAULTS)
    with pytest.raises(UsageError):
        f(1.0, DEFAULTS)  # time must increase
    with pytest.raises(UsageError):
        f(2.0, np.zeros(N_DIMS - 1))
    with pytest.raises(UsageError):
        VectorFilter(params={"legs": OneEuroParams()})
    with pytest.raises(UsageError):
        filter_vectors(np.zeros((3, N_DIMS)), np.arange(2))


@settings(max_examples=20)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["l", "r"]), st.sampled_from([1.0, -1.0]))
def test_thumb_roll_stays_on_its_side_of_the_double_cover(seed: int, side: str, sign: float) -> None:
    # spec §4.3: (roll, curl) and (roll ∓ 180°, −curl) are one thumb for a camera; a thumb
    # held near roll ±88° whose readings flip to the other end must not spin 180°
    rng = np.random.default_rng(seed)
    roll_i, curl_i = REGISTRY.index(f"g_thumb_roll_{side}"), REGISTRY.index(f"g_thumb_curl_{side}")
    f = VectorFilter()
    rolls, curls = [], []
    for k in range(60):
        v = DEFAULTS.copy()
        roll = sign * 0.975 + (rng.normal(0.0, 0.02) if k else 0.0)  # the first reading sets the branch
        curl = 0.4 + rng.normal(0.0, 0.01)
        if abs(roll) > 1.0:  # the producer's reading: |roll| ≤ 90°, the other form, clamped
            roll, curl = float(np.clip(roll - np.copysign(2.0, roll), -1.0, 1.0)), -curl
        v[roll_i], v[curl_i] = roll, curl
        out = f(k / 30.0, v)
        rolls.append(out[roll_i])
        curls.append(out[curl_i])
    assert (np.sign(rolls) == sign).all() and (np.asarray(rolls) * sign > 0.9).all()
    assert (np.asarray(curls) > 0.3).all()


# ---------------------------------------------------------------- the chest of a time series


def test_rotation_filter_keeps_a_still_rotation_and_calms_a_noisy_one() -> None:
    # spec §7.3 "Smoothing": the chest frame's One-Euro filter
    from posewire.codec.quaternion import from_axis_angle, to_matrix
    from posewire.producers.filter import RotationFilter

    still = to_matrix(from_axis_angle([0.0, 1.0, 0.0], 0.4))
    chest = RotationFilter()
    for k in range(10):
        np.testing.assert_allclose(chest(k / 30, still), still, atol=1e-12)
    rng = np.random.default_rng(5)
    chest = RotationFilter()
    raw, smooth = [], []
    for k in range(90):
        noisy = to_matrix(from_axis_angle(rng.normal(size=3), 0.03)) @ still
        raw.append(noisy)
        smooth.append(chest(k / 30, noisy))

    def steps(rotations: list[np.ndarray]) -> float:
        return float(np.median([np.arccos(np.clip((np.trace(a.T @ b) - 1) / 2, -1, 1))
                                for a, b in itertools.pairwise(rotations)]))

    assert steps(smooth) < 0.3 * steps(raw)
    with pytest.raises(UsageError):
        chest(1.0, still)  # times must increase


def test_a_smoothed_chest_steadies_the_head_and_matches_frame_by_frame() -> None:
    # spec §4.4: the signer's hips are not seen, so no body dims are sent and the head is
    # relative to the camera's upright frame, not to the chest: the chest filter, which steadies
    # the arms and palms, leaves the head as it was. One frame at a time with the same filter
    # gives the batch's result.
    from pathlib import Path

    from posewire.producers.filter import RotationFilter, jitter
    from posewire.producers.landmarks import HolisticLandmarks, landmarks_to_vectors
    from posewire.producers.poseformat import read_pose_file

    pose_file = read_pose_file(Path(__file__).parent / "data" / "holistic_signer.pose")
    lm = pose_file.landmarks
    times = np.arange(lm.batch) / pose_file.fps
    plain = landmarks_to_vectors(lm)
    steady = landmarks_to_vectors(lm, calibration=plain.calibration, chest_filter=RotationFilter(), times=times)
    heads = [REGISTRY.index(d) for d in ("h_yaw", "h_pitch", "h_roll")]
    assert "body_hips_not_visible" in plain.report.degenerate
    np.testing.assert_allclose(steady.vectors[:, heads], plain.vectors[:, heads], atol=1e-12, equal_nan=True)
    arms = [REGISTRY.index(f"a_{a}_{s}") for a in "xyz" for s in "lr"]
    assert np.nanmedian(jitter(steady.vectors[:, arms])) < np.nanmedian(jitter(plain.vectors[:, arms]))
    chest = RotationFilter()
    for i in range(lm.batch):
        one = HolisticLandmarks(lm.pose_world[i:i + 1], lm.pose_visibility[i:i + 1], lm.left_hand[i:i + 1],
                                lm.right_hand[i:i + 1], None if lm.face is None else lm.face[i:i + 1],
                                None if lm.hand_scale is None else lm.hand_scale[i:i + 1],
                                None if lm.pose_image is None else lm.pose_image[i:i + 1])
        row = landmarks_to_vectors(one, calibration=plain.calibration, chest_filter=chest, times=times[i:i + 1])
        np.testing.assert_allclose(row.vectors[0], steady.vectors[i], atol=1e-9, equal_nan=True)


# ---------------------------------------------------------------------- the visibility hold (spec §7.3)

_VIS = st.floats(0.0, 1.0, allow_nan=False)


def _held(seq: list[float], width: float = VISIBILITY_HOLD) -> list[float]:
    hold = VisibilityHold(width)
    return [float(hold(np.full(33, v))[0]) for v in seq]


@given(_VIS, st.integers(1, 30))
def test_a_constant_visibility_is_held_unchanged(v: float, n: int) -> None:
    assert _held([v] * n) == [v] * n


@given(st.floats(0.2, 0.8), st.lists(st.floats(-0.99, 0.99), min_size=1, max_size=40))
def test_a_visibility_wandering_within_the_width_never_crosses_a_cut(start: float, steps: list[float]) -> None:
    """Settled at ``start``, then anywhere within the width of it: the held value stays
    ``start``, so no cut (the 0.5 of §6.10, say) is crossed either way."""
    seq = [start] + [min(1.0, max(0.0, start + VISIBILITY_HOLD * s)) for s in steps]
    held = _held(seq)
    assert held == [start] * len(seq)
    cut = 0.5
    assert len({h >= cut for h in held}) == 1


@given(st.floats(0.5, 1.0), st.floats(0.0, 0.5 - VISIBILITY_HOLD - 1e-9), st.lists(_VIS, max_size=10))
def test_a_drop_below_the_cut_minus_the_width_ends_the_part_at_once(seen: float, drop: float,
                                                                    before: list[float]) -> None:
    """Whatever came before, a visibility more than the width below the cut (0.5) puts the
    held value below the cut in that very frame; a frame without a pose (NaN) reads 0."""
    held = _held([*before, seen, drop])
    assert held[-1] == drop < 0.5
    hold = VisibilityHold()
    hold(np.full(33, seen))
    assert (hold(np.full(33, np.nan)) == 0.0).all()


@given(st.lists(_VIS, min_size=1, max_size=40))
def test_the_held_value_is_never_more_than_the_width_from_the_visibility(seq: list[float]) -> None:
    held = _held(seq)
    assert all(abs(h - v) <= VISIBILITY_HOLD for h, v in zip(held, seq, strict=True))
    assert all(h in seq for h in held)  # it holds values it saw, never made-up ones


def test_the_visibility_hold_refuses_bad_input() -> None:
    with pytest.raises(UsageError) as err:
        VisibilityHold(1.0)
    assert err.value.code == "usage.out_of_range"
    with pytest.raises(UsageError) as err:
        VisibilityHold()(np.zeros(32))
    assert err.value.code == "usage.shape"


@given(st.floats(0.5, 1.0), st.integers(0, 32))
def test_a_landmark_outside_the_image_is_not_seen(v: float, k: int) -> None:
    hold = VisibilityHold()
    hold(np.full(33, v))
    inside = np.ones(33, dtype=bool)
    inside[k] = False
    held = hold(np.full(33, v), inside)
    assert held[k] == 0.0 and (np.delete(held, k) == v).all()
