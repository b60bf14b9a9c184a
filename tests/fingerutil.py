"""An independent reading of the joint ranges (spec §4.3 "Joint ranges"), shared by the tests."""

from __future__ import annotations

from posewire.codec.registry import REGISTRY

__all__ = ["BACKWARD_DEG", "joint_ranges", "sent_bends_deg"]

#: How far a real finger's base knuckle, PIP and DIP bend backward (degrees), as spec §4.3
#: "Joint ranges" states them (written here from the text, not imported from the producer).
BACKWARD_DEG = {"mcp": 45.0, "pip": 10.0, "dip": 20.0}


def joint_ranges(finger: str) -> tuple[float, float]:
    """The PIP (curl) and DIP (distal) ranges of ``finger`` (degrees at |n| = 1), from the registry."""
    return (float(REGISTRY.by_id[f"g_{finger}_curl_r"].row.angle_deg or 0.0),
            float(REGISTRY.by_id[f"g_{finger}_distal_r"].row.angle_deg or 0.0))


def sent_bends_deg(fold: float, pip: float, dip: float, finger: str) -> tuple[float, float, float]:
    """``(fold, curl, distal)`` degrees sent for a finger bent ``fold, pip, dip``: the distal
    phalanx keeps its direction ``fold + pip + dip`` from the metacarpal, the middle phalanx
    keeps ``fold + pip`` where the DIP is within range, and each joint takes what the one
    beyond it cannot (written on the phalanges' directions, not as the producer's excesses);
    the fold then stops at its backward limit."""
    pip_range, dip_range = joint_ranges(finger)
    last = fold + pip + dip
    distal = max(-BACKWARD_DEG["dip"], min(dip_range, dip))
    middle = last - distal
    curl = max(-BACKWARD_DEG["pip"], min(pip_range, middle - fold))
    return max(-BACKWARD_DEG["mcp"], middle - curl), curl, distal
