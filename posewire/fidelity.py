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

Only frames where the part was tracked are compared. :func:`flexion_tip_errors` measures a
peer that gives finger flexion only (kalidokit's three bends per finger) the same way, on the
same avatar and frames.
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

__all__ = ["ArmReprojection", "Reprojection", "flexion_tip_errors", "reprojection"]

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
    ``arms``: the same arm samples per side (``"l"``, ``"r"``; a side never tracked is absent);
    ``finger_tip_deg``, ``finger_image_tip_deg``: the tip errors of index…pinky alone (as a
    flexion-only peer is measured, :func:`flexion_tip_errors`); ``image_tip_by_side``: the
    image-plane tip errors of each tracked hand (``"l"``, ``"r"``)."""

    tip_deg: F64
    image_tip_deg: F64
    elbow_deg: F64
    reach_person: F64
    reach_avatar: F64
    fingers_dropped: int
    finger_values: int
    arms: Mapping[str, ArmReprojection] = field(default_factory=dict)
    finger_tip_deg: F64 = field(default_factory=lambda: np.zeros(0))
    finger_image_tip_deg: F64 = field(default_factory=lambda: np.zeros(0))
    image_tip_by_side: Mapping[str, F64] = field(default_factory=dict)


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


def _camera_tips(lm: HolisticLandmarks, result: LandmarkResult, side: str) -> tuple[NDArray[np.intp], F64, F64, F64]:
    """Rows compared for one hand (tracked, every point finite), the camera's palm basis
    ``(b, 3, 3)`` and its knuckle → tip directions in it ``(b, 5, 3)`` (both with the
    producer's depth gain), and the raw camera directions ``(b, 5, 3)`` (image plane)."""
    camera = lm.left_hand if side == "l" else lm.right_hand
    gained = with_depth_gain(camera, result.calibration.hand_depth_gain[side])
    rows = np.flatnonzero((result.tracking[f"hand_{side}"] == "tracked") & np.isfinite(camera).all(axis=(1, 2)))
    basis = _palm_basis(gained[rows], side)
    local = np.einsum("bji,bkj->bki", basis, _tip_directions(gained[rows]))
    return rows, basis, local, _tip_directions(camera[rows])


def _image_errors(cam_basis: F64, model_local: F64, cam_raw: F64) -> F64:
    """Image-plane angles (degrees) between directions in the palm frame placed in the camera's
    palm frame and the camera's own directions."""
    placed = np.einsum("bij,bkj->bki", cam_basis, model_local)
    return _angle_deg(placed[..., :2], cam_raw[..., :2])


def flexion_tip_errors(lm: HolisticLandmarks, result: LandmarkResult, side: str, bends: F64) -> tuple[F64, F64]:
    """Fingertip direction and image-plane tip direction errors (degrees, flattened, NaN-free)
    of a flexion-only hand — ``bends (B, 4, 3)``: index…pinky bent at the knuckle, PIP and DIP
    (radians, + toward the palm), as kalidokit gives them — posed on ``helix-humanoid@1``
    with every finger at its relaxed splay (side 0: no spread, which such a peer does not
    give), against the same camera hand and frames as :func:`reprojection` (index…pinky)."""
    rows, cam_basis, cam_local, cam_raw = _camera_tips(lm, result, side)
    straight = np.where(np.isfinite(result.vectors), result.vectors, 0.0)[rows]
    fingers = [d.index for d in REGISTRY.dimensions if d.row.group == "fingers" and d.id.endswith(f"_{side}")]
    straight[:, fingers] = 0.0  # side 0 (the relaxed splay), fold and curl 0; the thumb at rest
    avatar = render(straight).landmarks
    hand = avatar.left_hand if side == "l" else avatar.right_hand
    basis = _palm_basis(hand, side)
    local = np.einsum("bji,bkj->bki", basis, hand - hand[:, :1])
    chains = np.array(list(FINGER_CHAINS.values()))  # (4, 4): mcp, pip, dip, tip
    bones = local[:, chains[:, 1:]] - local[:, chains[:, :-1]]  # (b, 4, 3, 3), straight along d
    lengths = np.sqrt((bones * bones).sum(-1))
    along = _unit(bones.sum(axis=2))  # d: each straight finger's direction, in the palm plane
    turn = np.cumsum(bends[rows], axis=-1)  # (b, 4, 3)
    z = np.array([0.0, 0.0, 1.0])  # the palm normal, toward which a finger folds (spec §4.3)
    tips = (lengths[..., None] * (np.cos(turn)[..., None] * along[:, :, None] + np.sin(turn)[..., None] * z)).sum(2)
    tip = _angle_deg(cam_local[:, 1:], tips).ravel()
    image = _image_errors(cam_basis, tips, cam_raw[:, 1:]).ravel()
    return tip[np.isfinite(tip)], image[np.isfinite(image)]


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
    tip, image_tip, elbow, reach_p, reach_a, finger_tip, finger_image_tip = [], [], [], [], [], [], []
    arms: dict[str, ArmReprojection] = {}
    by_side: dict[str, F64] = {}
    dropped = values = 0
    for side in ("l", "r"):
        model = avatar.left_hand if side == "l" else avatar.right_hand
        if (result.tracking[f"hand_{side}"] == "tracked").any():
            rows, cam_basis, cam_local, cam_raw = _camera_tips(lm, result, side)
            av_local = np.einsum("bji,bkj->bki", _palm_basis(model[rows], side), _tip_directions(model[rows]))
            errors = _angle_deg(cam_local, av_local)
            tip.append(errors.ravel())
            finger_tip.append(errors[:, 1:].ravel())
            # the avatar's directions placed in the camera's palm frame, on the image plane
            errors = _image_errors(cam_basis, av_local, cam_raw)
            image_tip.append(errors.ravel())
            by_side[side] = errors.ravel()[np.isfinite(errors.ravel())]
            finger_image_tip.append(errors[:, 1:].ravel())
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
                        arms, flat(finger_tip), flat(finger_image_tip), by_side)
