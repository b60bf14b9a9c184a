"""Spec §1.5 "Clamps to a length", §3.3: the palm clamp's stated arithmetic, and §1.5's one sum."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from posewire.codec import conditions, mouthing, quaternion
from posewire.codec.errors import UsageError
from posewire.codec.ieee import ordered_norm, ordered_sum, ordered_sum1

C = quaternion.PALM_CLAMP
ULP = 2.0**-53  # the spacing of binary64 in [0.5, 1)


def test_target_is_the_stated_constant() -> None:
    assert quaternion.PALM_CLAMP_TARGET == 0.98 - 2.0**-49
    assert quaternion.PALM_CLAMP_TARGET.hex() == "0x1.f5c28f5c28f4cp-1"
    assert repr(quaternion.PALM_CLAMP_TARGET) == "0.9799999999999982"


def _band_quaternions(rng: np.random.Generator, count: int, w_max: float) -> np.ndarray:
    axis = rng.normal(size=(count, 3))
    axis /= ordered_norm(axis)[:, None]
    w = rng.uniform(0.0, w_max, count)
    q = np.concatenate([w[:, None], axis * np.sqrt(1.0 - w * w)[:, None]], axis=1)
    return q * rng.choice([-1.0, 1.0], size=(count, 1))


def test_a_million_clamped_palms_are_never_above_0_98() -> None:
    # the whole band and its edge (w just below sqrt(1 − 0.98²) = 0.198997)
    rng = np.random.default_rng(20261202)
    q = np.concatenate([_band_quaternions(rng, 700_000, 0.199), _edge(rng, 300_000)])
    for side in ("r", "l"):
        v, clamped = quaternion.palm_encode_unchecked(q, side=side)
        length = ordered_norm(v)
        assert clamped.sum() > 900_000
        assert (length[clamped] <= C).all()
        # within the bound of §1.5 around T = 0.98 − 16 ulp
        assert (length[clamped] >= C - 24 * ULP).all()


def _edge(rng: np.random.Generator, count: int) -> np.ndarray:
    w_edge = math.sqrt(1.0 - C * C)
    axis = rng.normal(size=(count, 3))
    axis /= ordered_norm(axis)[:, None]
    w = w_edge - rng.uniform(0.0, 1e-9, count)
    return np.concatenate([w[:, None], axis * np.sqrt(1.0 - w * w)[:, None]], axis=1)


def test_scaling_to_0_98_itself_would_break_it() -> None:
    # the figure of §1.5: the old reading v · (0.98 / |v|) is above 0.98 for about a fifth
    rng = np.random.default_rng(7)
    v = quaternion.canonicalize_unchecked(_band_quaternions(rng, 100_000, 0.198))[:, 1:]
    n = ordered_norm(v)
    old = ordered_norm(v * (C / n)[:, None])
    assert 0.15 < float(np.mean(old > C)) < 0.25


unit_quaternions = st.tuples(*[st.floats(-1.0, 1.0, allow_nan=False) for _ in range(4)]).filter(
    lambda q: math.sqrt(sum(x * x for x in q)) > 1e-3)


@settings(max_examples=400, deadline=None)
@given(unit_quaternions, st.sampled_from(["l", "r"]))
@example((0.0, 0.0, -1.0, 0.0), "r")
@example((0.055, 0.923, 0.078, 0.356), "r")
def test_encode1_equals_batch_bit_for_bit_and_stays_inside(q: tuple[float, float, float, float], side: str) -> None:
    single, clamped1 = quaternion.palm_encode1(q, side=side)  # type: ignore[arg-type]
    batch, clamped = quaternion.palm_encode_unchecked(np.array([q]), side=side)  # type: ignore[arg-type]
    assert [x.hex() for x in single] == [float(x).hex() for x in batch[0]]
    assert clamped1 == bool(clamped[0])
    assert float(ordered_norm(np.array(single))) <= C


vector_parts = st.tuples(*[st.floats(-1.0, 1.0, allow_nan=False) for _ in range(3)])


@settings(max_examples=400, deadline=None)
@given(vector_parts, st.sampled_from([C, None]))
@example((0.8, 0.6, 0.6), C)
@example((3.0, 4.0, 0.0), None)
def test_reconstruct1_equals_batch_and_a_clamped_value_is_not_clamped_again(
        v: tuple[float, float, float], clamp: float | None) -> None:
    single, changed1 = quaternion.reconstruct_w1(v, clamp=clamp)
    batch, changed = quaternion.reconstruct_w(np.array([v]), clamp=clamp)
    assert [x.hex() for x in single] == [float(x).hex() for x in batch[0]]
    assert changed1 == bool(changed[0])
    if clamp is not None:
        assert float(ordered_norm(np.array(single[1:]))) <= C
        again, changed_again = quaternion.reconstruct_w1(single[1:], clamp=clamp)
        assert not changed_again and again == single


def test_huge_vector_part_clamps_instead_of_vanishing() -> None:
    # §1.5: n and v of the scaled v · 2⁻ᵉ, so |v| beyond float64 still clamps to T
    q, changed = quaternion.reconstruct_w([1.7e308, 1.7e308, 1.7e308])
    assert bool(changed)
    assert float(ordered_norm(q[1:])) <= C
    assert q[1] == q[2] == q[3] > 0.56


# -- §1.5 sums ----------------------------------------------------------------------------
def _mix(name: str) -> list[float]:
    # the mixes of the vectors, as a third party reads them
    doc = json.loads((Path(__file__).resolve().parent.parent / "spec" / "conformance" / "inputs.json").read_text())
    case = next(c for c in doc["cases"] if c["id"] == name)
    return list(case["input"]["conditions"]["mouthing"])


def test_the_mouthing_sum_is_left_to_right_where_orders_disagree() -> None:
    accept = _mix("mouthing-sum-order-mirror-accepted")
    reject = _mix("mouthing-sum-order-mirror-rejected")
    limit = 1.0 + conditions.MOUTHING_SUM_TOLERANCE
    # the mixes straddle the limit: the stated order against fsum and numpy's pairwise sum
    assert ordered_sum1(accept) <= limit < math.fsum(accept)
    assert float(np.sum(np.array(accept))) > limit
    assert ordered_sum1(reject) > limit >= math.fsum(reject)
    assert float(ordered_sum(np.array(reject))) == ordered_sum1(reject)
    conditions.Conditions(mouthing=tuple(accept))  # accepted
    try:
        conditions.Conditions(mouthing=tuple(reject))
    except UsageError as err:
        assert err.code == "usage.out_of_range"
    else:
        raise AssertionError("conditions accepted a mix above the limit left to right")
    try:
        mouthing.viseme_baseline(reject)
    except UsageError as err:
        assert err.code == "usage.out_of_range"
    else:
        raise AssertionError("a mix above the limit left to right was accepted")
    shares, normalized = mouthing.normalize_shares(accept)
    assert bool(normalized)
    total = ordered_sum1(accept)
    assert [float(x).hex() for x in shares] == [(x / total).hex() for x in accept]
