"""The affect layer (spec §3.4.4)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from posewire.codec.affect import AFFECT_DIM_MASK, PRESET_MASKS, PRESET_TARGETS, apply_affect
from posewire.codec.errors import UsageError
from posewire.codec.registry import AFFECT_LABELS, AFFECT_MODES, REGISTRY
from posewire.codec.vector import LOWER, MIRROR_PERMUTATION, MIRROR_SIGN, N_DIMS, UPPER, from_dict, mirror

unit = st.floats(-1.0, 1.0, allow_nan=False)
intensities = st.floats(0.0, 1.0, allow_nan=False)
labels = st.sampled_from(AFFECT_LABELS)
modes = st.sampled_from(AFFECT_MODES)


def in_range_vectors() -> st.SearchStrategy[np.ndarray]:
    return arrays(np.float64, (N_DIMS,), elements=unit).map(lambda v: np.clip(v, LOWER, UPPER))


def _at(vec: np.ndarray, dim: str) -> float:
    return float(vec[REGISTRY.index(dim)])


# --- tables ---------------------------------------------------------------------------

def test_presets_only_touch_affect_dims() -> None:
    assert set(PRESET_TARGETS) == set(AFFECT_LABELS)
    for label in AFFECT_LABELS:
        assert not (PRESET_MASKS[label] & ~AFFECT_DIM_MASK).any(), label
        assert (PRESET_TARGETS[label][~PRESET_MASKS[label]] == 0).all()
    assert not PRESET_MASKS["neutral"].any()
    assert AFFECT_DIM_MASK.sum() == 6 + 27  # head, body, face, mouth


def test_presets_are_mirror_symmetric() -> None:
    # spec §3.2: affect is unchanged under mirroring, so every preset must be symmetric
    for label in AFFECT_LABELS:
        target = PRESET_TARGETS[label]
        np.testing.assert_array_equal(MIRROR_SIGN * target[MIRROR_PERMUTATION], target)


# --- hand-computed cases --------------------------------------------------------------

def test_happy_add_half() -> None:
    out, report = apply_affect(from_dict({"m_smile_l": 0.6}), label="happy", intensity=0.5,
                               mode="add")
    assert _at(out, "m_smile_l") == pytest.approx(1.0)
    assert _at(out, "m_smile_r") == pytest.approx(0.4)
    assert _at(out, "f_cheek_l") == pytest.approx(0.25)
    assert _at(out, "f_squint_r") == pytest.approx(0.15)
    assert report.ok


def test_sad_blend_half() -> None:
    vec = from_dict({"f_brow_inner": -0.3, "h_yaw": 0.2})
    out, report = apply_affect(vec, label="sad", intensity=0.5, mode="blend")
    assert _at(out, "f_brow_inner") == pytest.approx(0.2)
    assert _at(out, "m_smile_l") == pytest.approx(-0.3)
    assert _at(out, "h_pitch") == pytest.approx(0.075)
    assert _at(out, "b_pitch") == pytest.approx(0.05)
    assert _at(out, "h_yaw") == 0.2  # affect-capable but not listed: untouched
    assert report.ok


def test_add_clamps_and_reports() -> None:
    vec = from_dict({"b_pitch": -0.95, "f_blink_l": -0.5})
    out, report = apply_affect(vec, label="fearful", intensity=1.0, mode="add")
    assert _at(out, "b_pitch") == -1.0 and _at(out, "f_blink_l") == -1.0
    assert report.dims() == {"clamped": ["b_pitch", "f_blink_l"], "replaced": []}
    assert not report.ok


# --- errors ---------------------------------------------------------------------------

@pytest.mark.parametrize(("kwargs", "code"), [
    ({"label": "bored", "intensity": 0.5, "mode": "add"}, "usage.unknown_id"),
    ({"label": "happy", "intensity": 0.5, "mode": "mul"}, "usage.unknown_id"),
    ({"label": "happy", "intensity": 1.01, "mode": "add"}, "usage.out_of_range"),
    ({"label": "happy", "intensity": -0.01, "mode": "blend"}, "usage.out_of_range"),
    ({"label": "happy", "intensity": np.array([0.5, 2.0]), "mode": "blend"}, "usage.out_of_range"),
    ({"label": "happy", "intensity": float("nan"), "mode": "add"}, "usage.not_finite"),
])
def test_bad_options(kwargs: dict[str, object], code: str) -> None:
    with pytest.raises(UsageError) as err:
        apply_affect(from_dict({}), **kwargs)  # type: ignore[arg-type]
    assert err.value.code == code


def test_non_finite_touched_dim_rejected_untouched_dim_kept() -> None:
    with pytest.raises(UsageError) as err:
        apply_affect(from_dict({"m_smile_l": np.nan}), label="happy", intensity=0.5, mode="add")
    assert err.value.code == "usage.not_finite"
    vec = from_dict({"a_x_r": np.nan, "m_jaw": np.inf})
    out, _ = apply_affect(vec, label="happy", intensity=0.5, mode="blend")
    assert np.isnan(_at(out, "a_x_r")) and _at(out, "m_jaw") == np.inf


def test_batch_with_per_frame_intensity() -> None:
    batch = np.stack([from_dict({})] * 3)
    out, report = apply_affect(batch, label="happy", intensity=np.array([0.0, 0.5, 1.0]),
                               mode="blend")
    assert out.shape == (3, N_DIMS) and report.clamped.shape == (3, N_DIMS)
    np.testing.assert_allclose(out[:, REGISTRY.index("m_smile_r")], [0.0, 0.4, 0.8])
    out2, _ = apply_affect(from_dict({}), label="happy", intensity=np.array([0.25, 1.0]),
                           mode="add")
    assert out2.shape == (2, N_DIMS)


# --- laws (hypothesis) ----------------------------------------------------------------

@given(in_range_vectors(), labels, modes)
def test_intensity_zero_is_identity(vec: np.ndarray, label: str, mode: str) -> None:
    out, report = apply_affect(vec, label=label, intensity=0.0, mode=mode)  # type: ignore[arg-type]
    np.testing.assert_array_equal(out, vec)
    assert report.ok


@given(in_range_vectors(), labels)
def test_blend_at_one_reaches_preset(vec: np.ndarray, label: str) -> None:
    out, report = apply_affect(vec, label=label, intensity=1.0, mode="blend")
    touched = PRESET_MASKS[label]
    np.testing.assert_array_equal(out[touched], PRESET_TARGETS[label][touched])
    np.testing.assert_array_equal(out[~touched], vec[~touched])
    assert report.ok


@given(in_range_vectors(), labels, modes, intensities)
def test_only_listed_dims_change(vec: np.ndarray, label: str, mode: str, i: float) -> None:
    out, report = apply_affect(vec, label=label, intensity=i, mode=mode)  # type: ignore[arg-type]
    untouched = ~PRESET_MASKS[label]
    np.testing.assert_array_equal(out[untouched], vec[untouched])
    np.testing.assert_array_equal(out[~AFFECT_DIM_MASK], vec[~AFFECT_DIM_MASK])
    assert ((out >= LOWER) & (out <= UPPER)).all()
    assert not report.clamped[untouched].any() and not report.replaced.any()


@given(in_range_vectors(), labels, intensities)
def test_add_formula_with_reported_clamp(vec: np.ndarray, label: str, i: float) -> None:
    out, report = apply_affect(vec, label=label, intensity=i, mode="add")
    raw = vec + i * PRESET_TARGETS[label]
    touched = PRESET_MASKS[label]
    np.testing.assert_array_equal(out[touched], np.clip(raw, LOWER, UPPER)[touched])
    np.testing.assert_array_equal(report.clamped, touched & ((raw < LOWER) | (raw > UPPER)))


@given(in_range_vectors(), labels, intensities)
def test_blend_stays_between_pose_and_preset(vec: np.ndarray, label: str, i: float) -> None:
    out, report = apply_affect(vec, label=label, intensity=i, mode="blend")
    touched = PRESET_MASKS[label]
    lo = np.minimum(vec, PRESET_TARGETS[label])[touched]
    hi = np.maximum(vec, PRESET_TARGETS[label])[touched]
    assert ((out[touched] >= lo - 1e-15) & (out[touched] <= hi + 1e-15)).all()
    np.testing.assert_allclose(out[touched], (vec + i * (PRESET_TARGETS[label] - vec))[touched],
                               rtol=0, atol=1e-15)
    assert report.ok  # a blend of in-range values never needs a clamp


@given(in_range_vectors(), labels, modes, intensities, intensities)
def test_monotone_in_intensity(vec: np.ndarray, label: str, mode: str,
                                       i1: float, i2: float) -> None:
    lo, hi = sorted((i1, i2))
    a, _ = apply_affect(vec, label=label, intensity=lo, mode=mode)  # type: ignore[arg-type]
    b, _ = apply_affect(vec, label=label, intensity=hi, mode=mode)  # type: ignore[arg-type]
    # every touched dim moves toward its target direction as intensity grows
    direction = (PRESET_TARGETS[label] if mode == "add" else PRESET_TARGETS[label] - vec)
    assert ((b - a) * np.sign(direction) >= -1e-15).all()


@given(in_range_vectors(), labels, modes, intensities)
def test_mirror_commutes_with_affect(vec: np.ndarray, label: str, mode: str, i: float) -> None:
    out, _ = apply_affect(vec, label=label, intensity=i, mode=mode)  # type: ignore[arg-type]
    m_out, _ = apply_affect(mirror(vec), label=label, intensity=i, mode=mode)  # type: ignore[arg-type]
    np.testing.assert_array_equal(m_out, mirror(out))
