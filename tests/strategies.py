"""Hypothesis strategies shared by the tests."""

from __future__ import annotations

from hypothesis import strategies as st

from posewire.codec.conditions import Affect, Conditions
from posewire.codec.registry import AFFECT_LABELS, AFFECT_MODES, CONTACT_SITES, TRACKING_PARTS, TRACKING_STATES

__all__ = ["conditions_strategy", "mouthings"]


@st.composite
def mouthings(draw: st.DrawFn) -> tuple[float, ...]:
    raw = draw(st.lists(st.floats(0.0, 1.0), min_size=15, max_size=15))
    total = sum(raw)
    return tuple(raw) if total <= 1.0 else tuple(x / total * 0.999 for x in raw)


def conditions_strategy() -> st.SearchStrategy[Conditions]:
    return st.builds(
        Conditions,
        mouthing=st.none() | mouthings(),
        tracking=st.dictionaries(st.sampled_from(TRACKING_PARTS), st.sampled_from(TRACKING_STATES)),
        contact=st.dictionaries(st.sampled_from(("hand_l", "hand_r")),
                                st.sampled_from(CONTACT_SITES)),
        affect=st.none() | st.builds(Affect, st.sampled_from(AFFECT_LABELS),
                                     st.floats(0.0, 1.0), st.sampled_from(AFFECT_MODES)),
    )
