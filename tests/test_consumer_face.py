"""Tests of posewire.consumers.face: the seed 001 capability ladder."""

from __future__ import annotations

import numpy as np
import pytest

from posewire.codec.errors import UsageError
from posewire.codec.mouthing import shares_from_dict
from posewire.codec.vector import from_dict
from posewire.consumers.face import VOWEL_FOLD, face_weights

VEC = from_dict({"m_jaw": 0.4, "f_blink_l": 0.5})
MIX = shares_from_dict({"aa": 0.5, "PP": 0.2, "SS": 0.1})


def test_viseme15_plays_delta_and_untouched_visemes() -> None:
    out = face_weights(VEC, capability="viseme15", visemes=MIX)
    b = 0.5 * 0.7 - 0.2 * 0.7
    assert out.arkit["jawOpen"] == pytest.approx(0.4 * (1 - b))
    assert out.arkit["eyeBlinkLeft"] == pytest.approx(0.5)
    assert len(out.arkit) == 52 and len(out.visemes) == 15
    assert out.visemes["aa"] == 0.5 and out.visemes["PP"] == 0.2 and out.visemes["SS"] == pytest.approx(0.1)


def test_vowel5_folds_consonants() -> None:
    out = face_weights(VEC, capability="vowel5", visemes=MIX)
    assert set(out.visemes) == {"aa", "E", "I", "O", "U"}
    assert out.visemes["aa"] == pytest.approx(0.5)
    assert out.visemes["U"] == pytest.approx(0.2)  # PP -> U
    assert out.visemes["I"] == pytest.approx(0.1)  # SS -> I
    assert sum(v is None for v in VOWEL_FOLD.values()) == 1  # only sil plays nothing


def test_jaw_only_plays_effective_jaw() -> None:
    out = face_weights(VEC, capability="jaw", visemes=MIX)
    b = 0.5 * 0.7 - 0.2 * 0.7
    assert list(out.arkit) == ["jawOpen"]
    assert out.arkit["jawOpen"] == pytest.approx(b + 0.4 * (1 - b))
    assert face_weights(VEC, capability="jaw").arkit["jawOpen"] == pytest.approx(0.4)


def test_none_plays_nothing_and_reports() -> None:
    out = face_weights(VEC, capability="none")
    assert out.arkit == {} and out.visemes == {} and "capability" in out.report
    with pytest.raises(UsageError):
        face_weights(VEC, capability="full")  # type: ignore[arg-type]


def test_nan_and_oversum_reported() -> None:
    vec = VEC.copy()
    vec[-1] = np.nan
    out = face_weights(vec, capability="viseme15", visemes=MIX * 3)
    assert out.report["replaced"] == ["m_tongue"] and out.report["mix_normalized"]
