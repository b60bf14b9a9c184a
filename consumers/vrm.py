"""VRM humanoid bone names as canonical ``helix-humanoid@1`` joints.

A VRM names its humanoid bones (``VRMC_vrm`` 1.0: ``humanoid.humanBones`` ``{bone:
{node}}``; VRM 0.x: ``VRM.humanoid.humanBones`` ``[{bone, node}]``). The two versions
differ in the thumb: 1.0 counts ``Metacarpal, Proximal, Distal`` from the hand, 0.x
``Proximal, Intermediate, Distal`` — both are our ``thumb_01..03``.
"""

from __future__ import annotations

from .skeleton import FINGERS

__all__ = ["VRM_HUMAN_BONES"]


def _human_bones(thumb: tuple[str, str, str]) -> dict[str, str]:
    bones = {"pelvis": "hips", "spine_01": "spine", "spine_03": "chest", "spine_05": "upperChest",
             "neck_01": "neck", "head": "head"}
    for s, side in (("l", "left"), ("r", "right")):
        bones |= {f"clavicle_{s}": f"{side}Shoulder", f"upperarm_{s}": f"{side}UpperArm",
                  f"lowerarm_{s}": f"{side}LowerArm", f"hand_{s}": f"{side}Hand",
                  f"thigh_{s}": f"{side}UpperLeg", f"calf_{s}": f"{side}LowerLeg",
                  f"foot_{s}": f"{side}Foot", f"ball_{s}": f"{side}Toes"}
        for finger in FINGERS:
            vrm = "Little" if finger == "pinky" else finger.capitalize()
            segments = thumb if finger == "thumb" else ("Proximal", "Intermediate", "Distal")
            bones |= {f"{finger}_{k:02d}_{s}": f"{side}{vrm}{seg}" for k, seg in enumerate(segments, start=1)}
    return bones


#: Canonical ``helix-humanoid@1`` joint -> VRM 1.0 humanoid bone (``VRMC_vrm`` humanoid).
VRM_HUMAN_BONES: dict[str, str] = _human_bones(("Metacarpal", "Proximal", "Distal"))
