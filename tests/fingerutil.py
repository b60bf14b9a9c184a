"""An independent reading of the tip curl (spec §4.3 "tip curl"), shared by the tests."""

from __future__ import annotations

import numpy as np

__all__ = ["tip_curl_deg"]


def tip_curl_deg(pip: float, dip: float, lengths: tuple[float, float, float],
                 reference: tuple[float, float, float]) -> float:
    """The equal bend (degrees) of both distal joints that points the reference hand's
    fingertip (phalanges ``reference``) where a finger with phalanges ``lengths`` bent ``pip``,
    ``dip`` points: bisection over ±90° (not Newton), kept between the two bends."""

    def tip_angle(bones: tuple[float, float, float], first: float, second: float) -> float:
        tip = bones[0] + bones[1] * np.exp(1j * first) + bones[2] * np.exp(1j * (first + second))
        return float(np.angle(tip))

    target = tip_angle(lengths, np.radians(pip), np.radians(dip))
    lo, hi = -np.pi / 2, np.pi / 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if tip_angle(reference, mid, mid) < target else (lo, mid)
    root = float(np.degrees(0.5 * (lo + hi)))
    return float(np.clip(root, max(min(pip, dip), -90.0), min(max(pip, dip), 90.0)))
