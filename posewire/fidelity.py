"""Reprojection fidelity: what the camera saw, rebuilt from what was sent (issue 18).

A camera's landmarks are encoded (:func:`posewire.producers.landmarks.landmarks_to_vectors`),
the vectors are decoded onto ``helix-humanoid@1`` and posed by FK
(:func:`posewire.groundtruth.render`), and the avatar's landmarks are compared with the
camera's, each in its own frames so that the avatar's proportions drop out:

- **fingertip direction** (degrees): the direction knuckle (MCP) → tip of each finger in the
  hand's palm frame (spec §2.4), camera hand with the producer's depth gain (§4.3) against the
  avatar hand;
- **image-plane tip direction** (degrees): the same directions taken into the camera's palm
  frame and projected on the image plane (x, y), against the camera's own image-plane
  directions, which need no depth;
- **elbow bend** (degrees): the angle between upper arm and forearm;
- **reach**: shoulder → wrist distance over the arm's length (upper arm + forearm), the
  person's against the avatar's.

Only frames where the part was tracked are compared.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from posewire.codec.registry import REGISTRY
from posewire.groundtruth import render
from posewire.producers.hand import FINGER_CHAINS, THUMB_CHAIN, hand_frame, with_depth_gain
from posewire.producers.landmarks import POSE_POINTS, HolisticLandmarks, LandmarkResult

__all__ = ["ArmReprojection", "Reprojection", "reprojection"]

F64 = NDArray[np.float64]
_CHAINS = {"thumb": THUMB_CHAIN, **FINGER_CHAINS}


@dataclass(frozen=True)
class ArmReprojection:
    """One arm's samples over its tracked frames (NaN-free): the elbow-bend error (degrees) and
    the reach (shoulder → wrist over upper arm + forearm) of the person and of the avatar."""

    elbow_deg: F64
    reach_person: F64
    reach_avatar: F64

    @property
    def reach_error(self) -> float:
        """``|median person reach − median avatar reach|`` (NaN without a sample)."""
        if not self.reach_person.size:
            return float("nan")
        return float(abs(np.median(self.reach_person) - np.median(self.reach_avatar)))


@dataclass(frozen=True)
class Reprojection:
    """Per-sample errors (flattened over frames, fingers or sides; NaN-free): ``tip_deg`` and
    ``image_tip_deg`` per tracked finger, ``elbow_deg`` per tracked arm, ``reach`` (person,
    avatar) pairs per tracked arm, ``fingers_dropped`` = tracked hands' finger dims not sent;
    ``arms``: the same arm samples per side (``"l"``, ``"r"``; a side never tracked is absent)."""

    tip_deg: F64
    image_tip_deg: F64
    elbow_deg: F64
    reach_person: F64
    reach_avatar: F64
    fingers_dropped: int
    finger_values: int
    arms: Mapping[str, ArmReprojection] = field(default_factory=dict)


def _unit(v: F64) -> F64:
    n = np.sqrt((v * v).sum(-1, keepdims=True))
    out: F64 = v / np.where(n > 0, n, np.nan)
    return out


def _angle_deg(a: F64, b: F64) -> F64:
    cos = np.clip((_unit(a) * _unit(b)).sum(-1), -1.0, 1.0)
    out: F64 = np.degrees(np.arccos(cos))
    return out


def _palm_basis(hand: F64, side: str) -> F64:
    fingers, normal = hand_frame(hand, side=side)  # type: ignore[arg-type]
    y = _unit(fingers)
    z = _unit(normal - (normal * y).sum(-1, keepdims=True) * y)
    x = np.cross(y, z)
    return np.stack([x, y, z], axis=-1)  # columns X, Y, Z


def _tip_directions(hand: F64) -> F64:
    """Knuckle → tip directions ``(B, 5, 3)`` (thumb: its CMC → tip)."""
    return np.stack([hand[:, c[3]] - hand[:, c[0]] for c in _CHAINS.values()], axis=1)


def _elbow_and_reach(pose: F64, side: str) -> tuple[F64, F64]:
    s, e, w = (pose[:, POSE_POINTS[f"{j}_{side}"]] for j in ("shoulder", "elbow", "wrist"))
    upper, fore = e - s, w - e
    length = np.sqrt((upper * upper).sum(-1)) + np.sqrt((fore * fore).sum(-1))
    reach = np.sqrt(((w - s) ** 2).sum(-1)) / np.where(length > 0, length, np.nan)
    return _angle_deg(upper, fore), reach


def reprojection(lm: HolisticLandmarks, result: LandmarkResult) -> Reprojection:
    """Compare the camera's landmarks ``lm`` with the avatar posed from ``result.vectors``."""
    vectors = result.vectors
    avatar = render(np.where(np.isfinite(vectors), vectors, 0.0)).landmarks
    tip, image_tip, elbow, reach_p, reach_a = [], [], [], [], []
    arms: dict[str, ArmReprojection] = {}
    dropped = values = 0
    for side in ("l", "r"):
        hand_tracked = result.tracking[f"hand_{side}"] == "tracked"
        camera = lm.left_hand if side == "l" else lm.right_hand
        gained = with_depth_gain(camera, result.calibration.hand_depth_gain[side])
        model = avatar.left_hand if side == "l" else avatar.right_hand
        if hand_tracked.any():
            rows = np.flatnonzero(hand_tracked & np.isfinite(camera).all(axis=(1, 2)))
            cam_basis, av_basis = _palm_basis(gained[rows], side), _palm_basis(model[rows], side)
            cam_local = np.einsum("bji,bkj->bki", cam_basis, _tip_directions(gained[rows]))
            av_local = np.einsum("bji,bkj->bki", av_basis, _tip_directions(model[rows]))
            tip.append(_angle_deg(cam_local, av_local).ravel())
            # the avatar's directions placed in the camera's palm frame, on the image plane
            av_in_camera = np.einsum("bij,bkj->bki", cam_basis, av_local)
            cam_raw = _tip_directions(camera[rows])
            image_tip.append(_angle_deg(av_in_camera[..., :2], cam_raw[..., :2]).ravel())
        arm_tracked = result.tracking[f"arm_{side}"] == "tracked"
        if arm_tracked.any():
            bend_p, reach_person = _elbow_and_reach(lm.pose_world[arm_tracked], side)
            bend_a, reach_avatar = _elbow_and_reach(avatar.pose_world[arm_tracked], side)
            bend = np.abs(bend_p - bend_a)
            elbow.append(bend)
            both = np.isfinite(reach_person) & np.isfinite(reach_avatar)
            reach_p.append(reach_person[both])
            reach_a.append(reach_avatar[both])
            arms[side] = ArmReprojection(bend[np.isfinite(bend)], reach_person[both], reach_avatar[both])
    for side in ("l", "r"):
        rows = result.tracking[f"hand_{side}"] == "tracked"
        cols = [d.index for d in REGISTRY.dimensions if d.row.group == "fingers" and d.id.endswith(f"_{side}")]
        block = vectors[rows][:, cols]
        dropped += int(np.isnan(block).sum())
        values += int(block.size)

    def flat(parts: list[F64]) -> F64:
        out = np.concatenate(parts) if parts else np.zeros(0)
        return out[np.isfinite(out)]

    return Reprojection(flat(tip), flat(image_tip), flat(elbow), flat(reach_p), flat(reach_a), dropped, values,
                        arms)
