"""An independent reading of the tip curl (spec §4.3 "tip curl"), shared by the tests."""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["tip_beyond_deg", "tip_curl_deg"]


def _tip_angle(bones: tuple[float, float, float], first: float, second: float) -> float:
    tip = bones[0] + bones[1] * np.exp(1j * first) + bones[2] * np.exp(1j * (first + second))
    return float(np.angle(tip))


def tip_beyond_deg(pip: float, dip: float, lengths: tuple[float, float, float],
                   reference: tuple[float, float, float]) -> float:
    """The part (degrees) of the knuckle → tip turn of a finger with phalanges ``lengths`` bent
    ``pip``, ``dip`` that no equal bend within ±90° of the reference hand's finger reaches
    (spec §4.3 "tip beyond the curl's reach"): the reach by a dense scan (not the closed form)."""
    target = np.degrees(_tip_angle(lengths, np.radians(pip), np.radians(dip)))
    reach = _reach_deg(reference)
    return float(target - np.clip(target, -reach, reach))


@functools.cache
def _reach_deg(reference: tuple[float, float, float]) -> float:
    curls = np.radians(np.linspace(-90.0, 90.0, 720_001))
    tips = np.angle(reference[0] + reference[1] * np.exp(1j * curls) + reference[2] * np.exp(2j * curls))
    return float(np.degrees(tips.max()))


def tip_curl_deg(pip: float, dip: float, lengths: tuple[float, float, float],
                 reference: tuple[float, float, float]) -> float:
    """The equal bend (degrees) of both distal joints that points the reference hand's
    fingertip (phalanges ``reference``) where a finger with phalanges ``lengths`` bent ``pip``,
    ``dip`` points: bisection over ±90° (not Newton), kept between the two bends."""

    target = _tip_angle(lengths, np.radians(pip), np.radians(dip))
    lo, hi = -np.pi / 2, np.pi / 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _tip_angle(reference, mid, mid) < target else (lo, mid)
    root = float(np.degrees(0.5 * (lo + hi)))
    return float(np.clip(root, max(min(pip, dip), -90.0), min(max(pip, dip), 90.0)))
