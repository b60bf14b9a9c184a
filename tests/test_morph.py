"""Face/mouth dims <-> ARKit weights (spec §4.6)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from posewire.codec.errors import UsageError
from posewire.codec.morph import (
    ARKIT_INDEX,
    ARKIT_MIRROR_PERMUTATION,
    CHANNEL_DRIVERS,
    FACE_DIM_INDICES,
    N_ARKIT,
    NEGATIVE_GAINS,
    POSITIVE_GAINS,
    SECONDARY_DRIVERS,
    arkit_array_to_dict,
    arkit_dict_to_array,
    arkit_to_dims,
    dims_to_arkit,
    validate_weights,
)
from posewire.codec.registry import ARKIT_CHANNELS, DIMENSIONS, REGISTRY
from posewire.codec.vector import DEFAULTS, LOWER, N_DIMS, UPPER, from_dict, mirror

unit = st.floats(-1.0, 1.0, allow_nan=False)
weight = st.floats(0.0, 1.0, allow_nan=False)
any_float = st.floats(allow_nan=True, allow_infinity=True, width=64)

#: Lower bound of the values an ARKit round trip can carry: -1 where the dim has
#: negative channels, 0 where it has none (spec §4.6), over the face dims.
_REPRESENTABLE_LOW = np.array(
    [-1.0 if DIMENSIONS[int(i)].channels(-1) else 0.0 for i in FACE_DIM_INDICES])


def in_range_vectors() -> st.SearchStrategy[np.ndarray]:
    return arrays(np.float64, (N_DIMS,), elements=unit).map(lambda v: np.clip(v, LOWER, UPPER))


def representable_vectors() -> st.SearchStrategy[np.ndarray]:
    def squash(v: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.clip(v, LOWER, UPPER)
        out[FACE_DIM_INDICES] = np.maximum(out[FACE_DIM_INDICES], _REPRESENTABLE_LOW)
        return out

    return arrays(np.float64, (N_DIMS,), elements=unit).map(squash)


#: The largest sum of gains on one channel (mouthShrugLower: 1 + 0.2 + 0.2 + 0.5): face
#: values within ±1 / _MAX_DRIVE can never clip a channel.
_MAX_DRIVE = float((POSITIVE_GAINS + NEGATIVE_GAINS).sum(axis=1).max())


def unclipped_vectors() -> st.SearchStrategy[np.ndarray]:
    def shrink(v: np.ndarray) -> np.ndarray:
        out = v.copy()
        out[FACE_DIM_INDICES] /= _MAX_DRIVE
        return out

    return representable_vectors().map(shrink)


def _swap_sides(name: str) -> str:
    return name.replace("Left", "#").replace("Right", "Left").replace("#", "Right")


# --- the table: every channel exactly once, all 52 reachable --------------------------

def test_every_arkit_channel_has_exactly_one_primary_driver() -> None:
    primary: dict[str, list[tuple[str, int]]] = {}
    secondary: dict[str, list[tuple[str, int, float]]] = {}
    for dim in DIMENSIONS:
        for direction in (1, -1):
            names = [c.name for c in dim.channels(direction)]
            assert len(names) == len(set(names)), (dim.id, direction)  # a channel once
            for channel in dim.channels(direction):
                assert 0.0 < channel.gain <= 1.0
                if channel.gain == 1.0:
                    primary.setdefault(channel.name, []).append((dim.id, direction))
                else:
                    secondary.setdefault(channel.name, []).append(
                        (dim.id, direction, channel.gain))
    assert len(ARKIT_CHANNELS) == N_ARKIT == 52
    assert set(primary) == set(ARKIT_CHANNELS)  # all 52 named, nothing else
    assert set(secondary) <= set(ARKIT_CHANNELS)
    assert all(len(drivers) == 1 for drivers in primary.values()), primary
    assert tuple(primary[n][0] for n in ARKIT_CHANNELS) == CHANNEL_DRIVERS
    assert tuple(tuple(secondary.get(n, ())) for n in ARKIT_CHANNELS) == SECONDARY_DRIVERS
    assert ((POSITIVE_GAINS == 1).sum(axis=1) + (NEGATIVE_GAINS == 1).sum(axis=1) == 1).all()


def test_strong_shapes_of_seed_000() -> None:
    # seed 000 §4.7: each mouth dim recruits several ARKit morphs per direction
    def shape(dim_id: str, value: float) -> dict[str, float]:
        return arkit_array_to_dict(dims_to_arkit(from_dict({dim_id: value}))[0],
                                   nonzero_only=True)

    assert shape("m_jaw", 1.0) == pytest.approx({  # yawn
        "jawOpen": 1.0, "mouthLowerDownLeft": 0.3, "mouthLowerDownRight": 0.3,
        "mouthFunnel": 0.2})
    assert shape("m_pucker", 1.0) == pytest.approx({"mouthPucker": 1.0, "mouthFunnel": 0.3})
    assert shape("m_upper_lip", 1.0) == pytest.approx({  # bared teeth
        "mouthUpperUpLeft": 1.0, "mouthUpperUpRight": 1.0, "mouthLowerDownLeft": 0.3,
        "mouthLowerDownRight": 0.3, "mouthStretchLeft": 0.3, "mouthStretchRight": 0.3})
    # secondary drives are summed per channel, then clipped and reported
    weights, clipped = dims_to_arkit(from_dict({"m_upper_lip": 1.0, "m_lower_lip": 1.0}))
    assert weights[ARKIT_INDEX["mouthLowerDownLeft"]] == 1.0  # 1 + 0.3 clipped
    assert weights[ARKIT_INDEX["mouthStretchLeft"]] == pytest.approx(0.5)  # 0.3 + 0.2
    assert {ARKIT_CHANNELS[i] for i in np.flatnonzero(clipped)} == {
        "mouthLowerDownLeft", "mouthLowerDownRight"}
    # directions that had no channel in registry 1.0.0 and now recruit one
    assert shape("m_upper_lip", -0.4) == pytest.approx({"mouthRollUpper": 0.2})
    assert shape("m_lower_lip", -0.4) == pytest.approx({"mouthShrugLower": 0.2})


@pytest.mark.parametrize("name", ARKIT_CHANNELS)
def test_each_channel_reachable_alone(name: str) -> None:
    dim_id, direction = CHANNEL_DRIVERS[ARKIT_INDEX[name]]
    weights, clipped = dims_to_arkit(from_dict({dim_id: 0.5 * direction}))
    driven = {n for n, w in arkit_array_to_dict(weights).items() if w > 0}
    assert name in driven
    assert weights[ARKIT_INDEX[name]] == pytest.approx(0.5)
    # only the channels of that same (dim, direction) move: its primaries at 0.5, its
    # secondaries at 0.5 · gain
    for n in driven:
        if CHANNEL_DRIVERS[ARKIT_INDEX[n]] == (dim_id, direction):
            assert weights[ARKIT_INDEX[n]] == pytest.approx(0.5)
        else:
            (gain,) = [g for d, s, g in SECONDARY_DRIVERS[ARKIT_INDEX[n]]
                       if (d, s) == (dim_id, direction)]
            assert weights[ARKIT_INDEX[n]] == pytest.approx(0.5 * gain)
    assert not clipped.any()


def test_face_dims_are_the_face_and_mouth_groups() -> None:
    assert [DIMENSIONS[int(i)].row.group for i in FACE_DIM_INDICES] == (
        ["face"] * 13 + ["mouth"] * 14)


# --- hand-computed cases --------------------------------------------------------------

def test_hand_cases_dims_to_weights() -> None:
    weights, clipped = dims_to_arkit(from_dict({"m_jaw": 0.5, "f_gaze_yaw": -0.3,
                                                "m_smile_r": -0.2, "f_brow_l": 0.9}))
    assert arkit_array_to_dict(weights, nonzero_only=True) == pytest.approx({
        "jawOpen": 0.5, "mouthLowerDownLeft": 0.15, "mouthLowerDownRight": 0.15,
        "mouthFunnel": 0.1, "eyeLookInLeft": 0.3, "eyeLookOutRight": 0.3,
        "mouthFrownRight": 0.2, "mouthShrugLower": 0.04, "browOuterUpLeft": 0.9})
    assert not clipped.any()


def test_hand_cases_weights_to_dims() -> None:
    # in the image of the gains: a half yawn and a frown solve exactly
    vec, report = arkit_to_dims({"jawOpen": 0.5, "mouthLowerDownLeft": 0.15,
                                 "mouthLowerDownRight": 0.15, "mouthFunnel": 0.1,
                                 "mouthFrownLeft": 0.5, "mouthShrugLower": 0.1})
    face = {DIMENSIONS[int(i)].id: float(vec[i]) for i in FACE_DIM_INDICES}
    assert face == pytest.approx({**dict.fromkeys(face, 0.0), "m_jaw": 0.5, "m_smile_l": -0.5},
                                 abs=1e-12)
    assert report.ok
    # a channel that only a secondary explains: mouthRollUpper alone is the upper lip
    # lowered (m_upper_lip - recruits it at 0.5), not half of m_roll
    vec, report = arkit_to_dims({"mouthRollUpper": 0.3})
    assert vec[REGISTRY.index("m_upper_lip")] == pytest.approx(-0.6)
    assert vec[REGISTRY.index("m_roll")] == pytest.approx(0.0, abs=1e-12)
    # p and m are clipped at 0 before n = p - m: jawOpen + mouthClose
    vec, report = arkit_to_dims({"jawOpen": 0.5, "mouthClose": 0.2})
    assert vec[REGISTRY.index("m_jaw")] == pytest.approx(0.3)
    assert report.ok
    # a real overshoot is clipped and reported
    vec, report = arkit_to_dims({"mouthRollUpper": 0.8})
    assert vec[REGISTRY.index("m_upper_lip")] == -1.0
    assert report.channels()["dims_clipped"] == ["m_upper_lip"]


def test_other_dims_default_or_from_into() -> None:
    vec, _ = arkit_to_dims(np.zeros(N_ARKIT))
    np.testing.assert_array_equal(vec, DEFAULTS)
    into = from_dict({"a_x_r": 0.9, "m_jaw": 0.8, "h_yaw": -0.2})
    vec, _ = arkit_to_dims({"tongueOut": 0.3}, into=into)
    assert vec[REGISTRY.index("a_x_r")] == 0.9
    assert vec[REGISTRY.index("h_yaw")] == -0.2
    assert vec[REGISTRY.index("m_jaw")] == 0.0  # face dims are always solved (p < 0 -> 0)
    assert vec[REGISTRY.index("m_tongue")] == pytest.approx(0.3)
    assert into[REGISTRY.index("m_jaw")] == 0.8  # into is not modified


def test_batch_shapes_broadcast() -> None:
    weights = np.random.default_rng(1).uniform(0, 1, (3, 4, N_ARKIT))
    vec, report = arkit_to_dims(weights, into=DEFAULTS)
    assert vec.shape == (3, 4, N_DIMS) and report.clamped.shape == (3, 4, N_ARKIT)
    back, clipped = dims_to_arkit(vec)
    assert back.shape == (3, 4, N_ARKIT) and clipped.shape == (3, 4, N_ARKIT)
    vec2, _ = arkit_to_dims(weights[0, 0], into=np.stack([DEFAULTS] * 5))
    assert vec2.shape == (5, N_DIMS)
    with pytest.raises(UsageError) as err:
        arkit_to_dims(weights, into=np.zeros((7, N_DIMS)))
    assert err.value.code == "usage.shape"
    with pytest.raises(UsageError) as err:
        arkit_to_dims(np.zeros(51))
    assert err.value.code == "usage.shape"


# --- dict input, names ----------------------------------------------------------------

def test_dict_input_ignores_mediapipe_neutral() -> None:
    arr = arkit_dict_to_array({"_neutral": 0.7, "eyeBlinkRight": 0.25})
    assert arr[ARKIT_INDEX["eyeBlinkRight"]] == 0.25 and arr.sum() == 0.25


def test_dict_input_unknown_name() -> None:
    with pytest.raises(UsageError) as err:
        arkit_dict_to_array({"blinkLeft": 0.5})
    assert err.value.code == "usage.unknown_id" and err.value.path == "blinkLeft"


def test_array_to_dict_single_only() -> None:
    assert len(arkit_array_to_dict(np.zeros(N_ARKIT))) == 52
    assert arkit_array_to_dict(np.zeros(N_ARKIT), nonzero_only=True) == {}
    with pytest.raises(UsageError):
        arkit_array_to_dict(np.zeros((2, N_ARKIT)))


# --- weight validation ----------------------------------------------------------------

def test_weights_out_of_range_raise_or_clamp() -> None:
    bad = {"jawOpen": 1.5, "eyeWideLeft": -0.5}
    with pytest.raises(UsageError) as err:
        arkit_to_dims(bad)
    assert err.value.code == "usage.out_of_range"
    vec, report = arkit_to_dims(bad, policy="clamp")
    assert vec[REGISTRY.index("m_jaw")] == 1.0
    assert vec[REGISTRY.index("f_blink_l")] == 0.0
    assert report.channels() == {"clamped": ["eyeWideLeft", "jawOpen"], "replaced": [],
                                 "dims_clipped": []}
    assert not report.ok


def test_weights_nan_raise_or_replace() -> None:
    weights = np.zeros(N_ARKIT)
    weights[ARKIT_INDEX["cheekPuff"]] = np.nan
    with pytest.raises(UsageError) as err:
        validate_weights(weights)
    assert err.value.code == "usage.not_finite" and err.value.path == "cheekPuff"
    out, report = validate_weights(weights, policy="clamp")
    assert out[ARKIT_INDEX["cheekPuff"]] == 0.0 and report.channels()["replaced"] == ["cheekPuff"]


def test_bad_policy() -> None:
    for call in (lambda: dims_to_arkit(DEFAULTS, policy="skip"),  # type: ignore[arg-type]
                 lambda: arkit_to_dims(np.zeros(N_ARKIT), policy="skip")):  # type: ignore[arg-type]
        with pytest.raises(UsageError) as err:
            call()
        assert err.value.code == "usage.bad_option"


def test_dims_nan_and_out_of_range() -> None:
    vec = from_dict({"m_jaw": np.nan, "f_brow_r": 1.5})
    vec[REGISTRY.index("a_x_l")] = np.nan  # a non-face dim never matters
    weights, clipped = dims_to_arkit(vec)
    assert weights[ARKIT_INDEX["jawOpen"]] == 0.0 and weights[ARKIT_INDEX["mouthClose"]] == 0.0
    assert weights[ARKIT_INDEX["browOuterUpRight"]] == 1.0
    # a NaN dim flags every channel it drives, primary or secondary
    assert {ARKIT_CHANNELS[i] for i in np.flatnonzero(clipped)} == {
        "jawOpen", "mouthLowerDownLeft", "mouthLowerDownRight", "mouthFunnel",
        "mouthClose", "mouthPressLeft", "mouthPressRight", "browOuterUpRight"}
    with pytest.raises(UsageError) as err:
        dims_to_arkit(vec, policy="raise")
    assert err.value.code == "usage.out_of_range" and err.value.path == "f_brow_r"
    vec[REGISTRY.index("f_brow_r")] = 0.0
    with pytest.raises(UsageError) as err:
        dims_to_arkit(vec, policy="raise")
    assert err.value.code == "usage.not_finite" and err.value.path == "m_jaw"
    assert not dims_to_arkit(from_dict({"a_x_l": 5.0}), policy="raise")[1].any()


# --- properties -----------------------------------------------------------------------

@given(unclipped_vectors(), in_range_vectors())
def test_round_trip_dims_weights_dims_exact(vec: np.ndarray, into: np.ndarray) -> None:
    # spec §4.6 law: exact (to rounding) for representable in-range dims, no channel clipped
    weights, clipped = dims_to_arkit(vec)
    back, report = arkit_to_dims(weights, into=into)
    assert not clipped.any() and report.ok
    np.testing.assert_allclose(back[FACE_DIM_INDICES], vec[FACE_DIM_INDICES], rtol=0, atol=1e-12)
    others = np.setdiff1d(np.arange(N_DIMS), FACE_DIM_INDICES)
    np.testing.assert_array_equal(back[others], into[others])


@given(representable_vectors())
def test_round_trip_full_range_wherever_no_channel_clipped(vec: np.ndarray) -> None:
    weights, clipped = dims_to_arkit(vec)
    back, report = arkit_to_dims(weights)
    assert report.ok  # the solve never leaves [-1, 1] beyond rounding for rendered weights
    if not clipped.any():
        np.testing.assert_allclose(back[FACE_DIM_INDICES], vec[FACE_DIM_INDICES], rtol=0,
                                   atol=1e-12)
    else:  # a clipped channel loses information; the dims stay in range
        assert (np.abs(back[FACE_DIM_INDICES]) <= 1).all()


@given(arrays(np.float64, (N_DIMS,), elements=any_float))
def test_weights_always_in_unit_interval(vec: np.ndarray) -> None:
    weights, clipped = dims_to_arkit(vec)
    assert ((weights >= 0) & (weights <= 1)).all()
    face = vec[FACE_DIM_INDICES]
    if np.isfinite(face).all() and (np.abs(face) <= 1 / _MAX_DRIVE).all():
        assert not clipped.any()
    # a non-finite dim is reported on every channel it drives
    drives = (POSITIVE_GAINS + NEGATIVE_GAINS) != 0
    assert clipped[drives[:, ~np.isfinite(face)].any(axis=1)].all()


@given(in_range_vectors())
def test_in_range_dims_clip_only_where_drives_sum_past_one(vec: np.ndarray) -> None:
    # spec §4.6: w_c = Σ g·max(±n, 0) over the drives of c, clipped to [0, 1], clip reported
    weights, clipped = dims_to_arkit(vec)
    face = vec[FACE_DIM_INDICES]
    raw = np.maximum(face, 0) @ POSITIVE_GAINS.T + np.maximum(-face, 0) @ NEGATIVE_GAINS.T
    np.testing.assert_allclose(weights, np.minimum(raw, 1.0), rtol=0, atol=1e-12)
    sure = np.abs(raw - 1.0) > 1e-12  # away from the boundary, where rounding decides
    np.testing.assert_array_equal(clipped[sure], raw[sure] > 1.0)
    # a channel whose gains sum to at most 1 never clips for in-range dims
    assert not clipped[(POSITIVE_GAINS + NEGATIVE_GAINS).sum(axis=1) <= 1.0].any()


@pytest.mark.parametrize("k", range(FACE_DIM_INDICES.size))
def test_one_dim_drives_one_direction(k: int) -> None:
    for value in (0.7, -0.7):
        weights, _ = dims_to_arkit(from_dict({DIMENSIONS[int(FACE_DIM_INDICES[k])].id: value}))
        pos = weights[POSITIVE_GAINS[:, k] != 0]
        neg = weights[NEGATIVE_GAINS[:, k] != 0]
        assert not (pos.any() and neg.any())
        np.testing.assert_allclose(weights, 0.7 * (POSITIVE_GAINS if value > 0 else
                                                   NEGATIVE_GAINS)[:, k], rtol=0, atol=1e-15)


@given(in_range_vectors())
def test_mirror_consistency(vec: np.ndarray) -> None:
    weights, _ = dims_to_arkit(vec)
    mirrored, _ = dims_to_arkit(mirror(vec))
    swapped = {_swap_sides(n): w for n, w in arkit_array_to_dict(weights).items()}
    # to rounding: a self-mirror channel recruited by both sides (mouthShrugLower by
    # m_smile_l/_r −) sums the same terms in another order
    assert arkit_array_to_dict(mirrored) == pytest.approx(swapped, rel=0, abs=1e-15)
    np.testing.assert_allclose(mirrored, weights[ARKIT_MIRROR_PERMUTATION], rtol=0, atol=1e-15)


def test_mirror_gaze_in_out() -> None:
    weights, _ = dims_to_arkit(mirror(from_dict({"f_gaze_yaw": 0.6})))
    assert arkit_array_to_dict(weights, nonzero_only=True) == {
        "eyeLookInLeft": 0.6, "eyeLookOutRight": 0.6}
    perm = [ARKIT_CHANNELS[i] for i in ARKIT_MIRROR_PERMUTATION]
    assert perm[ARKIT_INDEX["eyeLookInLeft"]] == "eyeLookInRight"
    assert perm[ARKIT_INDEX["mouthLeft"]] == "mouthRight"
    assert perm[ARKIT_INDEX["jawOpen"]] == "jawOpen"


@given(arrays(np.float64, (N_ARKIT,), elements=weight))
def test_solved_dims_in_range_and_projection_idempotent(weights: np.ndarray) -> None:
    vec, report = arkit_to_dims(weights)
    assert (np.abs(vec[FACE_DIM_INDICES]) <= 1).all()
    assert not report.clamped.any() and not report.replaced.any()
    rendered, clipped = dims_to_arkit(vec)
    again, _ = arkit_to_dims(rendered)
    if not clipped.any():  # solving is a projection: solving its own rendering changes nothing
        np.testing.assert_allclose(again, vec, rtol=0, atol=1e-12)


@given(arrays(np.float64, (N_ARKIT,), elements=any_float))
def test_clamp_policy_always_yields_valid_weights(weights: np.ndarray) -> None:
    out, report = validate_weights(weights, policy="clamp")
    assert ((out >= 0) & (out <= 1)).all()
    changed = ~(out == weights)
    np.testing.assert_array_equal(changed, report.clamped | report.replaced)
