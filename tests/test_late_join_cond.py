"""Spec §5.7 rule 3: a late joiner's ``cond`` is the message that set the condition state — a
cond message's own bytes, or for a frame's ``c`` a ``cond`` with that frame's ``ts`` — so it does
not depend on when the consumer joins, nor (§5.7.1 rule 3) on which relay of a cluster."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from posewire.codec.conditions import conditions_from_obj
from posewire.codec.vector import N_DIMS
from posewire.codec.wire import ConditionsMessage, Frame, decode, encode
from posewire.relay.state import Stream

COND = conditions_from_obj({"tracking": {"hand_l": "lost"}})


def _frame(seq: int, ts: int, *, conditions: object = None) -> Frame:
    values = np.full(N_DIMS, np.nan)
    values[0] = seq / 1000
    return Frame(seq, ts, values, conditions)  # type: ignore[arg-type]


def _cond(stream: Stream) -> ConditionsMessage:
    got = dict(stream.late_join())["cond"]
    msg = decode(got[1])
    assert isinstance(msg, ConditionsMessage)
    return msg


@given(st.lists(st.integers(1, 10**9), min_size=1, max_size=6, unique=True), st.integers(0, 5))
def test_the_cond_of_a_frame_carries_that_frames_ts_whenever_one_joins(stamps: list[int], join_after: int) -> None:
    stamps.sort()
    s = Stream("demo")
    first = _frame(1, stamps[0], conditions=COND)
    s.update_frame(first, encode(first))
    seen = []
    for k, ts in enumerate(stamps[1:], start=2):
        if k - 2 == join_after:
            seen.append(_cond(s))  # a consumer joining in between (the item is then cached)
        later = _frame(k, ts)
        s.update_frame(later, encode(later))
    seen.append(_cond(s))
    assert {m.timestamp_us for m in seen} == {stamps[0]}
    assert all(m.conditions == COND for m in seen)


def test_a_newer_c_moves_the_ts_and_a_cond_message_keeps_its_bytes() -> None:
    s = Stream("demo")
    for seq, ts in ((1, 100), (2, 200)):
        f = _frame(seq, ts, conditions=COND)
        s.update_frame(f, encode(f))
    assert _cond(s).timestamp_us == 200
    msg = ConditionsMessage(COND, 7)
    s.set_conditions(msg, encode(msg))
    f = _frame(3, 300)
    s.update_frame(f, encode(f))
    assert dict(s.late_join())["cond"][1] == encode(msg)
