"""Hyper conditions data model (spec §3.4): validation, plain-object form, mirroring."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from strategies import conditions_strategy

from posewire.codec.conditions import (
    Conditions,
    conditions_from_obj,
    conditions_to_obj,
    mirror_conditions,
)
from posewire.codec.errors import DecodeError, UsageError
from posewire.codec.registry import (
    VISEMES,
)


@given(conditions_strategy())
def test_obj_round_trip(c: Conditions) -> None:
    assert conditions_from_obj(conditions_to_obj(c)) == c


@given(conditions_strategy())
def test_mirror_is_an_involution(c: Conditions) -> None:
    assert mirror_conditions(mirror_conditions(c)) == c


def test_mirror_swaps_sides_hand_computed() -> None:
    c = Conditions(tracking={"hand_l": "lost", "arm_r": "not_estimated", "head": "lost"},
                   contact={"hand_l": "cheek_r", "hand_r": "chin"})
    m = mirror_conditions(c)
    assert dict(m.tracking) == {"arm_l": "not_estimated", "hand_r": "lost", "head": "lost"}
    assert dict(m.contact) == {"hand_l": "chin", "hand_r": "cheek_l"}


def test_defaults_and_empty() -> None:
    c = Conditions()
    assert c.empty and c.tracking_state("hand_l") == "tracked"
    assert conditions_to_obj(c) == {}
    assert conditions_from_obj({}) == c
    assert not Conditions(tracking={"face": "lost"}).empty


def test_maps_are_registry_ordered_and_read_only() -> None:
    c = Conditions(tracking={"mouth": "lost", "arm_l": "lost"})
    assert list(c.tracking) == ["arm_l", "mouth"]
    with pytest.raises(TypeError):
        c.tracking["head"] = "lost"  # type: ignore[index]
    assert hash(c) == hash(Conditions(tracking={"arm_l": "lost", "mouth": "lost"}))


def test_mouthing_sum_tolerance() -> None:
    ok = (1.0 / 15 + 1e-8,) * 15  # sum 1 + 1.5e-7 <= 1 + 1e-6
    assert Conditions(mouthing=ok).mouthing == ok
    with pytest.raises(UsageError) as e:
        Conditions(mouthing=(0.6, 0.6) + (0.0,) * 13)
    assert e.value.code == "usage.out_of_range"


BAD: list[tuple[Any, str, str]] = [
    ([], "decode.type", "conditions"),
    ({"tracking": {"hand_q": "lost"}}, "decode.unknown_id", "conditions.tracking.hand_q"),
    ({"tracking": {"hand_l": "gone"}}, "decode.unknown_id", "conditions.tracking.hand_l"),
    ({"tracking": {"hand_l": 3}}, "decode.type", "conditions.tracking.hand_l"),
    ({"tracking": []}, "decode.type", "conditions.tracking"),
    ({"contact": {"hand_l": "moon"}}, "decode.unknown_id", "conditions.contact.hand_l"),
    ({"contact": {"head": "chin"}}, "decode.unknown_id", "conditions.contact.head"),
    ({"mouthing": [0.0] * 14}, "decode.out_of_range", "conditions.mouthing"),
    ({"mouthing": "aa"}, "decode.type", "conditions.mouthing"),
    ({"mouthing": [0.0] * 14 + [float("nan")]}, "decode.not_finite", "conditions.mouthing[14]"),
    ({"mouthing": [0.0] * 14 + [True]}, "decode.type", "conditions.mouthing[14]"),
    ({"mouthing": [-0.1] + [0.0] * 14}, "decode.out_of_range", "conditions.mouthing[0]"),
    ({"mouthing": [0.5, 0.6] + [0.0] * 13}, "decode.out_of_range", "conditions.mouthing"),
    ({"affect": {"label": "happy", "intensity": 1.5, "mode": "add"}}, "decode.out_of_range",
     "conditions.affect.intensity"),
    ({"affect": {"label": "bored", "intensity": 0.5, "mode": "add"}}, "decode.unknown_id",
     "conditions.affect.label"),
    ({"affect": {"label": "happy", "intensity": 0.5, "mode": "mul"}}, "decode.unknown_id",
     "conditions.affect.mode"),
    ({"affect": {"label": "happy", "mode": "add"}}, "decode.missing_field",
     "conditions.affect.intensity"),
    ({"affect": {"label": "happy", "intensity": float("inf"), "mode": "add"}},
     "decode.not_finite", "conditions.affect.intensity"),
    ({"affect": 1}, "decode.type", "conditions.affect"),
]


@pytest.mark.parametrize(("obj", "code", "path"), BAD)
def test_bad_peer_data_is_a_decode_error(obj: Any, code: str, path: str) -> None:
    with pytest.raises(DecodeError) as e:
        conditions_from_obj(obj, error_family="decode")
    assert (e.value.code, e.value.path) == (code, path)


def test_usage_family_maps_codes() -> None:
    with pytest.raises(UsageError) as e:
        conditions_from_obj({"tracking": {"hand_q": "lost"}}, error_family="usage")
    assert e.value.code == "usage.unknown_id"


def test_unknown_top_level_keys_are_ignored() -> None:
    assert conditions_from_obj({"future": 1, "tracking": {"face": "lost"}}) == Conditions(
        tracking={"face": "lost"})


def test_viseme_order_is_the_registry_order() -> None:
    s = [0.0] * 15
    s[VISEMES.index("aa")] = 0.7
    c = conditions_from_obj({"mouthing": s})
    assert c.mouthing is not None and c.mouthing[10] == 0.7
