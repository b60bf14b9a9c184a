"""Mouthing: viseme baseline and the delta law (spec §4.7, §3.4.1)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.typing import ArrayLike

from posewire.codec.errors import UsageError
from posewire.codec.morph import ARKIT_INDEX, CHANNEL_DRIVERS, dims_to_arkit
from posewire.codec.mouthing import (
    BASELINE_TABLE,
    MOUTH_DIM_INDICES,
    N_VISEMES,
    apply_mouthing,
    as_shares,
    mouthing_delta,
    mouthing_to_arkit,
    normalize_shares,
    shares_from_dict,
    viseme_baseline,
)
from posewire.codec.registry import ARKIT_CHANNELS, DIMENSIONS, MOUTHING_SEED_TABLE, REGISTRY, VISEMES
from posewire.codec.vector import LOWER, N_DIMS, UPPER, from_dict, mirror

unit = st.floats(-1.0, 1.0, allow_nan=False)
JAW = REGISTRY.index("m_jaw")
PRESS = REGISTRY.index("m_press")
MOUTH_CHANNELS = np.array(
    [DIMENSIONS[REGISTRY.index(dim)].row.group == "mouth" for dim, _ in CHANNEL_DRIVERS])


def in_range_vectors() -> st.SearchStrategy[np.ndarray]:
    return arrays(np.float64, (N_DIMS,), elements=unit).map(lambda v: np.clip(v, LOWER, UPPER))


def mixes() -> st.SearchStrategy[np.ndarray]:
    """Valid viseme mixes: shares in [0, 1] with sum ≤ 1."""
    def scale(raw: np.ndarray) -> np.ndarray:
        total = raw.sum()
        return raw / total if total > 1 else raw

    return arrays(np.float64, (N_VISEMES,),
                  elements=st.floats(0.0, 1.0, allow_nan=False)).map(scale)


def _mix(**shares: float) -> np.ndarray:
    return shares_from_dict(shares)


# --- hand-computed cases --------------------------------------------------------------

def test_seed_table() -> None:
    assert BASELINE_TABLE[VISEMES.index("aa"), JAW] == 0.7
    assert BASELINE_TABLE[VISEMES.index("PP"), JAW] == -0.7
    assert BASELINE_TABLE[VISEMES.index("PP"), PRESS] == 0.7
    assert np.count_nonzero(BASELINE_TABLE) == 3


def test_aa_full_with_zero_jaw_sends_no_jaw_open() -> None:
    vec = from_dict({})
    morphs = mouthing_to_arkit(vec, _mix(aa=1.0))
    assert morphs.arkit[ARKIT_INDEX["jawOpen"]] == 0.0
    assert morphs.arkit[MOUTH_CHANNELS].sum() == 0.0
    assert morphs.visemes[VISEMES.index("aa")] == 1.0
    _, effective = apply_mouthing(vec, _mix(aa=1.0))
    assert effective[JAW] == pytest.approx(0.7)


def test_aa_half_baseline() -> None:
    baseline = viseme_baseline(_mix(aa=0.5))
    assert baseline[JAW] == pytest.approx(0.35)
    assert np.count_nonzero(baseline) == 1


def test_aa_half_same_direction() -> None:
    delta, effective = apply_mouthing(from_dict({"m_jaw": 0.5}), _mix(aa=0.5))
    assert delta[JAW] == pytest.approx(0.5 * 0.65)
    assert effective[JAW] == pytest.approx(0.675)


def test_pp_opposite_cancels_and_press_untouched() -> None:
    delta, effective = apply_mouthing(from_dict({"m_jaw": 1.0}), _mix(PP=1.0))
    assert delta[JAW] == pytest.approx(0.7) and effective[JAW] == 0.0
    assert delta[PRESS] == 0.0 and effective[PRESS] == pytest.approx(0.7)
    morphs = mouthing_to_arkit(from_dict({"m_jaw": 1.0}), _mix(PP=1.0))
    assert morphs.arkit[ARKIT_INDEX["jawOpen"]] == pytest.approx(0.7)
    assert morphs.arkit[ARKIT_INDEX["mouthPressLeft"]] == 0.0


def test_delta_hand_values() -> None:
    a = np.array([0.0, 0.5, 1.0, -0.5, -1.0, -0.4, 0.5])
    b = np.array([0.7, 0.7, 0.7, 0.7, 0.7, 0.0, -0.7])
    np.testing.assert_allclose(mouthing_delta(a, b), [0.0, 0.15, 0.3, -0.35, -0.7, -0.4, 0.35])


def test_inactive_mix_passes_authored_through() -> None:
    vec = from_dict({"m_jaw": -0.4, "m_smile_l": 0.3})
    empties: list[ArrayLike] = [[], np.zeros(N_VISEMES)]
    for empty in empties:
        delta, effective = apply_mouthing(vec, empty)
        np.testing.assert_array_equal(delta, vec)
        np.testing.assert_array_equal(effective, vec)


# --- share handling -------------------------------------------------------------------

def test_normalize_over_one_reported() -> None:
    shares, normalized = normalize_shares(_mix(aa=0.8, PP=0.4))
    assert bool(normalized)
    assert shares[VISEMES.index("aa")] == pytest.approx(2 / 3)
    assert shares.sum() == pytest.approx(1.0)


def test_normalize_batch() -> None:
    batch = np.stack([_mix(aa=0.5), _mix(O=2.0), np.zeros(N_VISEMES)])
    shares, normalized = normalize_shares(batch)
    assert normalized.tolist() == [False, True, False]
    np.testing.assert_array_equal(shares[0], batch[0])
    assert shares[1, VISEMES.index("O")] == 1.0


@pytest.mark.parametrize(("bad", "code"), [
    (-0.1, "usage.out_of_range"), (np.nan, "usage.not_finite"), (np.inf, "usage.not_finite")])
def test_bad_shares_rejected(bad: float, code: str) -> None:
    shares = _mix(aa=0.5)
    shares[VISEMES.index("E")] = bad
    for call in (normalize_shares, viseme_baseline, as_shares):
        with pytest.raises(UsageError) as err:
            call(shares)
        assert err.value.code == code and err.value.path == "mouthing.E"


def test_bad_share_shape_and_names() -> None:
    with pytest.raises(UsageError) as err:
        as_shares(np.zeros(14))
    assert err.value.code == "usage.shape"
    with pytest.raises(UsageError) as err:
        shares_from_dict({"ah": 0.5})
    assert err.value.code == "usage.unknown_id"


def test_unnormalized_mix_rejected_by_baseline() -> None:
    with pytest.raises(UsageError) as err:
        viseme_baseline(_mix(aa=0.8, PP=0.5))
    assert err.value.code == "usage.out_of_range"
    viseme_baseline(_mix(aa=0.5, PP=0.5 + 5e-7))  # within the 1e-6 condition tolerance


def test_authored_must_be_valid() -> None:
    for bad, code in ((1.5, "usage.out_of_range"), (np.nan, "usage.not_finite")):
        with pytest.raises(UsageError) as err:
            apply_mouthing(from_dict({"m_press": bad}), _mix(aa=0.5))
        assert err.value.code == code and err.value.path == "m_press"
    # non-mouth dims are none of mouthing's business
    vec = from_dict({"a_x_r": np.nan})
    delta, _ = apply_mouthing(vec, _mix(aa=0.5))
    assert np.isnan(delta[REGISTRY.index("a_x_r")])


def test_batch_broadcast() -> None:
    shares = np.stack([_mix(aa=1.0), _mix(PP=1.0), _mix()])
    delta, effective = apply_mouthing(from_dict({"m_jaw": 0.5}), shares)
    assert delta.shape == effective.shape == (3, N_DIMS)
    np.testing.assert_allclose(effective[:, JAW], [0.85, -0.35, 0.5])
    morphs = mouthing_to_arkit(from_dict({}), shares)
    assert morphs.arkit.shape == (3, 52) and morphs.visemes.shape == (3, N_VISEMES)
    np.testing.assert_array_equal(morphs.visemes, shares)


# --- laws (hypothesis) ----------------------------------------------------------------

@given(unit)
def test_authored_zero_gives_zero_delta(b: float) -> None:
    assert mouthing_delta(0.0, b) == 0.0


@given(unit, unit)
def test_effective_within_bounds(a: float, b: float) -> None:
    assert abs(b + float(mouthing_delta(a, b))) <= 1.0


@given(unit, unit)
def test_same_direction_uses_only_remaining_range(a: float, b: float) -> None:
    assume(a == 0 or b == 0 or (a > 0) == (b > 0))
    e = b + float(mouthing_delta(a, b))
    low, high = (b, 1.0) if a >= 0 else (-1.0, b)
    assert low - 1e-15 <= e <= high + 1e-15
    assert float(mouthing_delta(a, b)) == pytest.approx(a * (1 - abs(b)), abs=0)


@given(unit.filter(lambda b: b != 0))
def test_opposite_full_cancels_exactly(b: float) -> None:
    a = -float(np.sign(b))
    assert b + float(mouthing_delta(a, b)) == 0.0


@example(-1.0, -6.419500302686059e-21, 1.1125369292536007e-308)  # a·b underflows to -0.0
@given(unit, unit, unit)
def test_monotone_in_authored(a1: float, a2: float, b: float) -> None:
    lo, hi = sorted((a1, a2))
    assert float(mouthing_delta(lo, b)) <= float(mouthing_delta(hi, b))


@given(unit, unit)
def test_delta_is_odd_under_joint_sign_flip(a: float, b: float) -> None:
    assert float(mouthing_delta(-a, -b)) == -float(mouthing_delta(a, b))


@given(in_range_vectors(), mixes())
def test_apply_follows_the_law_per_mouth_dim(vec: np.ndarray, shares: np.ndarray) -> None:
    delta, effective = apply_mouthing(vec, shares)
    baseline = viseme_baseline(shares)
    others = np.setdiff1d(np.arange(N_DIMS), MOUTH_DIM_INDICES)
    np.testing.assert_array_equal(delta[others], vec[others])
    np.testing.assert_array_equal(effective[others], vec[others])
    m = MOUTH_DIM_INDICES
    np.testing.assert_array_equal(delta[m], mouthing_delta(vec[m], baseline[m]))
    np.testing.assert_allclose(effective[m], baseline[m] + delta[m], rtol=0, atol=1e-15)
    assert (np.abs(effective) <= UPPER).all()


@given(in_range_vectors(), mixes())
def test_authored_zero_leaves_visemes_untouched(vec: np.ndarray, shares: np.ndarray) -> None:
    vec = vec.copy()
    vec[MOUTH_DIM_INDICES] = 0.0
    morphs = mouthing_to_arkit(vec, shares)
    assert morphs.arkit[MOUTH_CHANNELS].sum() == 0.0  # no ARKit mouth channel moves
    np.testing.assert_array_equal(morphs.visemes, shares)
    face_only, _ = dims_to_arkit(vec)
    np.testing.assert_array_equal(morphs.arkit, face_only)


@given(in_range_vectors(), mixes())
def test_face_channels_unaffected_by_mouthing(vec: np.ndarray, shares: np.ndarray) -> None:
    plain, _ = dims_to_arkit(vec)
    morphs = mouthing_to_arkit(vec, shares)
    np.testing.assert_array_equal(morphs.arkit[~MOUTH_CHANNELS], plain[~MOUTH_CHANNELS])
    # mouth dims recruit only mouth channels (secondaries included, spec §4.7), and only
    # summed mouth drives can pass 1 and clip
    assert ((morphs.arkit >= 0) & (morphs.arkit <= 1)).all()
    assert not morphs.clipped[~MOUTH_CHANNELS].any()


@given(in_range_vectors(), mixes())
def test_mirror_commutes_with_mouthing(vec: np.ndarray, shares: np.ndarray) -> None:
    # spec §3.2: the viseme mix is unchanged under mirroring
    delta, effective = apply_mouthing(vec, shares)
    m_delta, m_effective = apply_mouthing(mirror(vec), shares)
    np.testing.assert_array_equal(m_delta, mirror(delta))
    np.testing.assert_array_equal(m_effective, mirror(effective))


@given(arrays(np.float64, (N_VISEMES,), elements=st.floats(0.0, 10.0, allow_nan=False)))
def test_normalized_mix_sums_to_at_most_one(raw: np.ndarray) -> None:
    shares, normalized = normalize_shares(raw)
    assert shares.sum() <= 1.0 + 1e-12
    assert bool(normalized) == (raw.sum() > 1.0)
    if not normalized:
        np.testing.assert_array_equal(shares, raw)
    viseme_baseline(shares)  # a normalized mix is always accepted


def test_mouth_channels_are_the_mouth_group() -> None:
    names = {ARKIT_CHANNELS[i] for i in np.flatnonzero(MOUTH_CHANNELS)}
    assert {"jawOpen", "mouthClose", "tongueOut", "cheekPuff"} <= names
    assert "eyeBlinkLeft" not in names and len(names) == 29


# ---------------------------------------------------------------------------- a producer's mix
# spec §4.7 "A mix from the measured mouth" (posewire.codec.mouthing.mix_from_mouth)

_mouth_value = st.floats(-1.0, 1.0, allow_nan=False)


def _mouth_vector(values: list[float]) -> np.ndarray:
    from posewire.codec.mouthing import MOUTH_DIM_INDICES

    vec = np.full(N_DIMS, np.nan)
    vec[MOUTH_DIM_INDICES] = values
    return vec


@settings(max_examples=300, deadline=None)
@given(values=st.lists(_mouth_value, min_size=14, max_size=14))
@example(values=[0.12, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])  # jaw a little open
@example(values=[-0.7, 0.7, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])  # lips pressed: PP
@example(values=[-0.3, -0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])  # against PP's press
def test_mix_from_mouth_gives_back_the_mouth_by_the_law(values: list[float]) -> None:
    from posewire.codec.mouthing import MIX_STEP, MOUTH_DIM_INDICES, apply_mouthing, mix_from_mouth

    assume(len(values) == MOUTH_DIM_INDICES.size)
    measured = _mouth_vector(values)
    shares, authored = mix_from_mouth(measured)
    # bounds (§3.4.1): a sendable mix, in steps of MIX_STEP, on the seed table's visemes only
    assert (shares >= 0.0).all() and shares.sum() <= 1.0 + 1e-12
    np.testing.assert_allclose(shares / MIX_STEP, np.round(shares / MIX_STEP), atol=1e-9)
    seeded = {VISEMES.index(v) for v, _ in MOUTHING_SEED_TABLE}
    assert set(np.flatnonzero(shares).tolist()) <= seeded
    # round trip: the consumer's law gives the measured mouth back
    mouth = authored[MOUTH_DIM_INDICES]
    assert (np.abs(mouth) <= 1.0).all()
    _, effective = apply_mouthing(np.nan_to_num(authored), shares)
    np.testing.assert_allclose(effective[MOUTH_DIM_INDICES], values, rtol=0, atol=1e-12)
    # idempotence: the mouth it gives is estimated the same way again
    again, _ = mix_from_mouth(effective)
    np.testing.assert_array_equal(again, shares)


def test_mix_from_mouth_of_a_neutral_mouth_is_no_mix_and_absent_dims_stay_absent() -> None:
    from posewire.codec.mouthing import MOUTH_DIM_INDICES, mix_from_mouth

    shares, authored = mix_from_mouth(_mouth_vector([0.0] * MOUTH_DIM_INDICES.size))
    assert not shares.any() and (authored[MOUTH_DIM_INDICES] == 0.0).all()
    values = [0.35] + [0.0] * (MOUTH_DIM_INDICES.size - 2) + [np.nan]  # jaw open, m_tongue absent
    shares, authored = mix_from_mouth(_mouth_vector(values))
    assert shares[VISEMES.index("aa")] == 0.5 and np.isnan(authored[MOUTH_DIM_INDICES[-1]])
    assert authored[MOUTH_DIM_INDICES[0]] == 0.0  # 0.7 · 0.5 = 0.35: the viseme carries it all
    with pytest.raises(UsageError) as err:
        mix_from_mouth(_mouth_vector([np.inf] + [0.0] * (MOUTH_DIM_INDICES.size - 1)))
    assert err.value.code == "usage.not_finite"
