"""Vector layout, validation and mirroring (spec §3.1, §3.2, §3.5)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from posewire.codec.errors import UsageError
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import (
    DEFAULTS,
    LOWER,
    N_DIMS,
    UPPER,
    as_vector,
    from_dict,
    mirror,
    to_dict,
    validate,
)

finite = st.floats(-1.0, 1.0, allow_nan=False)
any_float = st.floats(allow_nan=True, allow_infinity=True, width=64)


def in_range_vectors() -> st.SearchStrategy[np.ndarray]:
    return arrays(np.float64, (N_DIMS,), elements=finite).map(lambda v: np.clip(v, LOWER, UPPER))


def test_defaults_from_empty_dict() -> None:
    np.testing.assert_array_equal(from_dict({}), DEFAULTS)
    assert from_dict({})[REGISTRY.index("a_y_r")] == pytest.approx(-0.6222)


def test_missing_marked_nan_when_not_filled() -> None:
    vec = from_dict({"h_yaw": 0.5}, fill_defaults=False)
    assert vec[REGISTRY.index("h_yaw")] == 0.5
    assert np.isnan(vec).sum() == N_DIMS - 1


def test_unknown_id_is_usage_error_with_code() -> None:
    with pytest.raises(UsageError) as info:
        from_dict({"h_yaww": 0.1})
    assert info.value.code == "usage.unknown_id" and info.value.path == "h_yaww"


def test_shape_checked() -> None:
    with pytest.raises(UsageError) as info:
        as_vector(np.zeros(78))
    assert info.value.code == "usage.shape"


@given(in_range_vectors())
def test_dict_round_trip(vec: np.ndarray) -> None:
    np.testing.assert_array_equal(from_dict(to_dict(vec)), vec)


@given(in_range_vectors())
def test_validate_accepts_in_range_unchanged(vec: np.ndarray) -> None:
    out, report = validate(vec)
    np.testing.assert_array_equal(out, vec)
    assert report.ok


@given(arrays(np.float64, (3, N_DIMS), elements=any_float))
def test_clamp_reports_exactly_what_changed(batch: np.ndarray) -> None:
    out, report = validate(batch, policy="clamp")
    assert np.all(out >= LOWER) and np.all(out <= UPPER)
    changed = ~((out == batch) | (np.isnan(out) & np.isnan(batch)))
    np.testing.assert_array_equal(changed, report.clamped | report.replaced)
    np.testing.assert_array_equal(report.replaced, ~np.isfinite(batch))
    # idempotence: clamping a clamped vector changes nothing
    again, report2 = validate(out, policy="clamp")
    np.testing.assert_array_equal(again, out)
    assert report2.ok


@pytest.mark.parametrize(("value", "code"), [(float("nan"), "usage.not_finite"),
                                             (float("inf"), "usage.not_finite"),
                                             (1.5, "usage.out_of_range")])
def test_raise_policy_names_the_dim(value: float, code: str) -> None:
    vec = DEFAULTS.copy()
    vec[REGISTRY.index("m_jaw")] = value
    with pytest.raises(UsageError) as info:
        validate(vec)
    assert info.value.code == code and info.value.path == "m_jaw"


def test_unipolar_negative_is_out_of_range() -> None:
    vec = from_dict({"a_spread_r": -0.1})
    out, report = validate(vec, policy="clamp")
    assert out[REGISTRY.index("a_spread_r")] == 0.0
    assert report.dims() == {"clamped": ["a_spread_r"], "replaced": []}


@given(arrays(np.float64, (2, N_DIMS), elements=finite))
def test_mirror_is_an_involution(batch: np.ndarray) -> None:
    np.testing.assert_array_equal(mirror(mirror(batch)), batch)


def test_mirror_swaps_sides_and_negates_lateral() -> None:
    vec = from_dict({"a_x_l": 0.5, "a_x_r": -0.25, "h_yaw": 0.3, "h_pitch": 0.2,
                     "m_shift": -0.4, "f_blink_l": 1.0})
    out = to_dict(mirror(vec))
    assert out["a_x_r"] == 0.5 and out["a_x_l"] == -0.25
    assert out["h_yaw"] == -0.3 and out["h_pitch"] == 0.2 and out["m_shift"] == 0.4
    assert out["f_blink_r"] == 1.0 and out["f_blink_l"] == 0.0


def test_defaults_are_mirror_symmetric() -> None:
    np.testing.assert_array_equal(mirror(DEFAULTS), DEFAULTS)
