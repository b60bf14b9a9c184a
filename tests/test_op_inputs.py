"""Spec §6.5: one rule for every op's input, and no op raises anything but a posewire error.

Hypothesis draws inputs for every op from its key table (right kinds, wrong kinds,
missing keys, extra keys, booleans, huge numbers, wrong lengths, unknown ids) and checks
that each op either answers or raises a :class:`~posewire.codec.errors.PosewireError`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posewire.codec.errors import PosewireError, UsageError
from posewire.codec.registry import ARKIT_CHANNELS, DIMENSIONS, VISEMES
from posewire.conformance import operations
from posewire.conformance.inputs import INPUTS, Key

OPS = operations()
IDS = [d.id for d in DIMENSIONS]
WORDS = st.sampled_from([*IDS[:6], "h_yaw", "m_jaw", "zz", "", "l", "r", "x", "raise",
                         "clamp", "happy", "add", "blend", "aa", "PP", "jawOpen",
                         "shoulder_l", "wrist_r", "hips", "spine", "f", "hello", "cal"])
NUM = (st.floats(allow_nan=False, allow_infinity=False, width=64)
       | st.integers(-(10**400), 10**400) | st.sampled_from([0, 1, -1, 0.5, 1e-300, 1e300]))
JSON_SCALAR = st.none() | st.booleans() | NUM | WORDS
JSON_ANY = st.recursive(JSON_SCALAR, lambda c: st.lists(c, max_size=4)
                        | st.dictionaries(WORDS, c, max_size=4), max_leaves=12)


def _value(key: Key) -> st.SearchStrategy[Any]:
    k = key.kind
    good: st.SearchStrategy[Any]
    if k == "number":
        good = NUM
    elif k == "integer":
        good = st.integers(-5, 10_000)
    elif k == "string":
        good = WORDS
    elif k == "numbers":
        good = st.lists(NUM, max_size=5)
    elif k == "points":
        good = st.lists(st.lists(NUM, min_size=2, max_size=4), max_size=3)
    elif k == "strings":
        good = st.lists(WORDS, max_size=4)
    elif k == "values":
        good = st.dictionaries(st.sampled_from([*IDS, *ARKIT_CHANNELS[:4], "zz"]),
                               NUM | st.floats(-1, 1), max_size=5)
    elif k == "vectors":
        good = st.dictionaries(WORDS, st.lists(NUM, min_size=2, max_size=4), max_size=4)
    elif k == "shares":
        good = (st.dictionaries(st.sampled_from([*VISEMES, "zz"]), st.floats(-0.5, 1.5),
                                max_size=4)
                | st.lists(st.floats(0, 1), min_size=14, max_size=16))
    else:  # object / any
        good = st.dictionaries(WORDS, JSON_ANY, max_size=4)
    return st.one_of(good, good, good, JSON_ANY)


@st.composite
def _inputs(draw: st.DrawFn, op: str) -> dict[str, Any]:
    inp: dict[str, Any] = {}
    for name, key in INPUTS[op].items():
        if draw(st.integers(0, 9)) == 0:
            continue  # a key left out
        inp[name] = draw(_value(key))
    if draw(st.integers(0, 14)) == 0:
        inp[draw(WORDS)] = draw(JSON_ANY)
    return inp


@settings(max_examples=60)
@pytest.mark.parametrize("op", sorted(INPUTS))
@given(data=st.data())
def test_no_op_raises_anything_but_a_posewire_error(op: str, data: st.DataObject) -> None:
    inp = data.draw(_inputs(op))
    try:
        result = OPS[op](inp)
    except PosewireError:
        return
    json.dumps(result, allow_nan=False)  # a result is plain, finite JSON


def test_every_op_has_an_input_row() -> None:
    assert set(INPUTS) == set(OPS)


@pytest.mark.parametrize(("op", "inp", "code"), [
    ("vector.validate", {"values": {"h_yaw": "x"}}, "usage.bad_option"),
    ("vector.validate", {"values": {"h_yaw": True}}, "usage.bad_option"),
    ("vector.validate", {}, "usage.bad_option"),
    ("vector.validate", {"values": {}, "extra": 1}, "usage.bad_option"),
    ("euler.to_quat", {"yaw": 1, "pitch": 2}, "usage.bad_option"),
    ("euler.to_quat", {"yaw": 10**400, "pitch": 2, "roll": 0}, "usage.not_finite"),
    ("affect.apply", {"values": {}, "label": "happy", "intensity": "x", "mode": "add"},
     "usage.bad_option"),
    ("affect.apply", {"values": {}, "label": "joy", "intensity": 0.5, "mode": "add"},
     "usage.unknown_id"),
    ("arm.to_physical", {"n": [0, 0, 0], "side": "l"}, "usage.bad_option"),
    ("arm.to_physical", {"n": [0, 0, 0], "side": "l", "calibration": {"hand": 1}},
     "usage.bad_option"),
    ("mouthing.apply", {"values": {}}, "usage.bad_option"),
    ("mouthing.delta", {"authored": 1.5, "baseline": 0.5}, "usage.out_of_range"),
    ("vector.mirror", {"values": {}, "expect_ids": ["zz"]}, "usage.unknown_id"),
    ("calibration.measure", {"sites": {"elbow_r": [0, 0, 0]}}, "usage.unknown_id"),
    ("wire.decode", {"hex": "zz"}, "usage.out_of_range"),
    ("wire.decode", {"hex": "AB"}, "usage.out_of_range"),
])
def test_the_one_rule_names_the_code(op: str, inp: dict[str, Any], code: str) -> None:
    with pytest.raises(UsageError) as info:
        OPS[op](inp)
    assert info.value.code == code
